// boxer's javascript and typescript cells (docs/e2b.md, "Code
// interpreter"): a javascript or typescript context is a node of its own,
// as E2B's template runs a javascript kernel, so that variables, functions,
// imports and the working directory outlive a cell. session_node.py starts
// it with this file (delivered read-only as /code/.boxer-node.js), the
// context's directory as its argument.
//
// Each cell is one JSON line on fd 0: its token, the files holding its
// code and variables, the two FIFOs its output goes to and the file its
// records go to. When it has ended the driver writes its records (a JSON
// line each: its value as a result, its error) and answers "TOKEN STATUS"
// on fd 63, a pipe session_node.py alone reads.
//
// A cell runs in the global scope, its top-level declarations made
// globals so that the next cell sees them, inside an async function so
// that it may await: `const x = await f()` is `x = await f()` after a
// `var x` of the global scope. Its last expression statement's value is
// its result (awaited when it is a promise). Import declarations become
// awaits of import(). TypeScript cells are transpiled first (Debian's
// node-typescript): types are stripped, not checked.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const url = require('url');
const util = require('util');
const vm = require('vm');
const { builtinModules, createRequire } = require('module');

const CTL = 63;
// Node's own parser, which Debian's nodejs depends on.
const acorn = require('acorn');
let ts = null;

process.chdir(process.argv[2] || '/');

// The cell's output goes to its FIFOs; what runs after its end (a timer it
// left) writes nowhere.
const sinks = { out: null, err: null };
for (const [name, stream] of [['out', process.stdout], ['err', process.stderr]]) {
  stream.write = function write(chunk, encoding, cb) {
    if (typeof encoding === 'function') {
      cb = encoding;
      encoding = undefined;
    }
    const fd = sinks[name];
    if (fd !== null) {
      try {
        fs.writeSync(fd, typeof chunk === 'string' ? Buffer.from(chunk, encoding || 'utf8') : chunk);
      } catch (e) {
        // The reader went (the cell was interrupted).
      }
    }
    if (cb) process.nextTick(cb);
    return true;
  };
}

// importModule loads a module for the cell's imports as the cell's
// directory would: a relative path from there, a package from its
// node_modules, then node's own (fs, Debian's packages).
async function importModule(spec) {
  let target = spec;
  if (spec.startsWith('.') || spec.startsWith('/')) {
    target = url.pathToFileURL(path.resolve(process.cwd(), spec)).href;
  } else if (!spec.includes(':') && !builtinModules.includes(spec.split('/')[0])) {
    try {
      target = url.pathToFileURL(createRequire(path.join(process.cwd(), '[cell]')).resolve(spec)).href;
    } catch (e) {
      // Not found from there: node's own lookup decides.
    }
  }
  return import(target);
}

globalThis.__boxer_import = importModule;
globalThis.require = createRequire(path.join(process.cwd(), '[cell]'));

// names lists the identifiers a declaration's pattern binds.
function names(pattern, out) {
  switch (pattern.type) {
    case 'Identifier':
      out.push(pattern.name);
      break;
    case 'ObjectPattern':
      for (const p of pattern.properties) names(p.type === 'RestElement' ? p.argument : p.value, out);
      break;
    case 'ArrayPattern':
      for (const p of pattern.elements) if (p) names(p, out);
      break;
    case 'RestElement':
      names(pattern.argument, out);
      break;
    case 'AssignmentPattern':
      names(pattern.left, out);
      break;
  }
  return out;
}

// dynamicImports makes each import() of a cell's code the driver's
// importModule: a script of the vm module has no import() of its own.
function dynamicImports(code) {
  const found = [];
  const walk = (node) => {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach(walk);
    if (node.type === 'ImportExpression') found.push(node.start);
    for (const key of Object.keys(node)) if (key !== 'type') walk(node[key]);
  };
  walk(parse(code));
  for (const start of found.sort((a, b) => b - a)) code = code.slice(0, start) + '__boxer_import' + code.slice(start + 'import'.length);
  return code;
}

function parse(code) {
  const opts = { ecmaVersion: 'latest', allowAwaitOutsideFunction: true, allowHashBang: true, allowImportExportEverywhere: true };
  try {
    return acorn.parse(code, { ...opts, sourceType: 'module' });
  } catch (e) {
    try {
      return acorn.parse(code, { ...opts, sourceType: 'script' });
    } catch (e2) {
      const err = new SyntaxError(e2.message);
      err.stack = 'SyntaxError: ' + e2.message;
      throw err;
    }
  }
}

// rewrite makes a cell's code the body of an async function of the
// global scope: it returns the names to declare as globals first and the
// function's source, on the cell's lines.
function rewrite(code) {
  code = dynamicImports(code);
  const tree = parse(code);
  const globals = [];
  const prologue = [];
  const edits = []; // [start, end, text]
  const src = (n) => code.slice(n.start, n.end);
  const declare = (decl, stmt) => {
    switch (decl.type) {
      case 'VariableDeclaration': {
        const parts = [];
        for (const d of decl.declarations) {
          globals.push(...names(d.id, []));
          if (d.init) parts.push(src(d.id) + ' = ' + src(d.init));
          else if (decl.kind !== 'var') parts.push(src(d.id) + ' = undefined');
        }
        edits.push([stmt.start, stmt.end, parts.length ? 'void (' + parts.join(', ') + ');' : ';']);
        return;
      }
      case 'FunctionDeclaration':
        globals.push(decl.id.name);
        prologue.push('globalThis[' + JSON.stringify(decl.id.name) + '] = ' + decl.id.name + ';');
        if (stmt !== decl) edits.push([stmt.start, stmt.end, src(decl)]);
        return;
      case 'ClassDeclaration':
        globals.push(decl.id.name);
        edits.push([stmt.start, stmt.end, decl.id.name + ' = ' + src(decl) + ';']);
        return;
    }
  };
  tree.body.forEach((stmt, i) => {
    switch (stmt.type) {
      case 'ImportDeclaration': {
        const from = 'await __boxer_import(' + JSON.stringify(stmt.source.value) + ')';
        const parts = [];
        for (const s of stmt.specifiers) {
          globals.push(s.local.name);
          if (s.type === 'ImportDefaultSpecifier') parts.push(s.local.name + ' = __boxer_m.default');
          else if (s.type === 'ImportNamespaceSpecifier') parts.push(s.local.name + ' = __boxer_m');
          else parts.push(s.local.name + ' = __boxer_m[' + JSON.stringify(s.imported.name || s.imported.value) + ']');
        }
        edits.push([stmt.start, stmt.end, '{ const __boxer_m = ' + from + '; ' + parts.map((p) => p + ';').join(' ') + ' }']);
        return;
      }
      case 'ExportNamedDeclaration':
        if (stmt.declaration) declare(stmt.declaration, stmt);
        else edits.push([stmt.start, stmt.end, ';']);
        return;
      case 'ExportDefaultDeclaration':
        edits.push([stmt.start, stmt.end, 'void (' + src(stmt.declaration) + ');']);
        return;
      case 'ExpressionStatement':
        if (i === tree.body.length - 1) edits.push([stmt.start, stmt.end, 'return (' + src(stmt.expression) + ');']);
        return;
      default:
        declare(stmt, stmt);
    }
  });
  let body = code;
  for (const [start, end, text] of edits.reverse()) body = body.slice(0, start) + text + body.slice(end);
  return { globals: [...new Set(globals)], source: '(async () => {' + prologue.join(' ') + body + '\n})()' };
}

function transpile(code) {
  if (ts === null) ts = require('typescript');
  const opts = {
    fileName: 'cell.ts',
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      isolatedModules: true,
    },
  };
  // An import the cell does not use is still the next cell's.
  if (Number(ts.versionMajorMinor.split('.')[0]) >= 5) opts.compilerOptions.verbatimModuleSyntax = true;
  else opts.compilerOptions.preserveValueImports = true;
  const out = ts.transpileModule(code, opts);
  const errors = (out.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    const msg = errors.map((d) => {
      const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
      if (!d.file) return 'TS' + d.code + ': ' + text;
      const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
      return '(' + (line + 1) + ',' + (character + 1) + '): TS' + d.code + ': ' + text;
    }).join('\n');
    const err = new SyntaxError(msg);
    err.stack = 'SyntaxError: ' + msg;
    throw err;
  }
  return out.outputText;
}

function errorRecord(e) {
  if (e instanceof Error || (e && typeof e === 'object' && 'stack' in e)) {
    // The stack ends at the cell's code, not in this driver.
    const lines = String(e.stack || '').split('\n');
    let end = lines.length;
    while (end > 1 && lines[end - 1].startsWith('    at ') && !/\(?cell-\d+\.[jt]s:/.test(lines[end - 1])) end--;
    const stack = lines.slice(0, end).join('\n');
    return { kind: 'error', name: String(e.name || 'Error'), value: String(e.message === undefined ? '' : e.message), traceback: stack };
  }
  // A thrown value that is no Error: E2B's kernel shows it as it is.
  return { kind: 'error', name: 'Error', value: util.inspect(e), traceback: '' };
}

let running = null; // the cell under way: { token, answer }

async function runCell(spec) {
  const records = [];
  const code = fs.readFileSync(spec.code, 'utf8');
  const env = spec.env ? JSON.parse(fs.readFileSync(spec.env, 'utf8')) : {};
  for (const [k, v] of Object.entries(spec.global_env || {})) process.env[k] = v;
  const saved = {};
  for (const [k, v] of Object.entries(env)) {
    saved[k] = Object.prototype.hasOwnProperty.call(process.env, k) ? process.env[k] : undefined;
    process.env[k] = v;
  }
  let status = 0;
  try {
    const js = spec.language === 'typescript' ? transpile(code) : code;
    const cell = rewrite(js);
    if (cell.globals.length > 0) vm.runInThisContext('var ' + cell.globals.join(', ') + ';');
    const filename = 'cell-' + spec.call + (spec.language === 'typescript' ? '.ts' : '.js');
    const script = new vm.Script(cell.source, { filename, importModuleDynamically: importModule });
    let value = await script.runInThisContext({ breakOnSigint: true });
    if (value !== null && typeof value === 'object' && typeof value.then === 'function') value = await value;
    if (value !== undefined) records.push({ kind: 'result', main: true, data: { 'text/plain': util.inspect(value) } });
  } catch (e) {
    if (e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') status = 130;
    else {
      status = 1;
      records.push(errorRecord(e));
    }
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  return { status, records };
}

function finish(cell, status, records) {
  if (running !== cell) return; // answered already (interrupted)
  running = null;
  for (const name of ['out', 'err']) {
    if (sinks[name] !== null) fs.closeSync(sinks[name]);
    sinks[name] = null;
  }
  try {
    fs.writeFileSync(cell.records, records.map((r) => JSON.stringify(r) + '\n').join(''), { mode: 0o600 });
  } catch (e) {
    status = status || 1;
  }
  fs.writeSync(CTL, cell.token + ' ' + status + '\n');
}

// An interrupt (boxer's, at the cell's timeout) ends the cell under way
// now; code of its still running is left to run.
process.on('SIGINT', () => {
  if (running !== null) finish(running, 130, []);
});

const lines = readline.createInterface({ input: fs.createReadStream(null, { fd: 0 }), crlfDelay: Infinity });
lines.on('line', (line) => {
  let spec;
  try {
    spec = JSON.parse(line);
  } catch (e) {
    return;
  }
  const cell = { token: spec.token, records: spec.records };
  running = cell;
  try {
    sinks.out = fs.openSync(spec.out, 'w');
    sinks.err = fs.openSync(spec.err, 'w');
  } catch (e) {
    finish(cell, 1, [errorRecord(e)]);
    return;
  }
  runCell(spec).then(({ status, records }) => finish(cell, status, records));
});
lines.on('close', () => process.exit(0));
