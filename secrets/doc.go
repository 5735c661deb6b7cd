// Package secrets carries secrets into a run without touching disk: a
// secret is a name and a value, loaded by boxer from its own environment, a
// file or a command (--secret), or from a directory of files (serve
// --secrets-dir), and held in memory only.
//
// A run receives a secret as an environment variable (the ",env" suffix of
// --secret), or not at all: the egress proxy injects it into a request
// header for one host (--inject HOST:HEADER=TEMPLATE, where the template
// names secrets as {{secret:NAME}}), so that the program uses a credential
// it never sees. What the run prints passes through a Masker, which
// replaces every value with [secret:NAME].
//
// No value appears in an error message, a log line or the String (or any
// fmt verb) of a type of this package: errors name secrets, files and
// commands, never what they hold (a failed command's error carries the
// last line of its stderr, as a helper's own message). A flag that looks like it carries a value
// (--secret API_KEY=hunter2) is refused without repeating it.
//
// Masking is a guard against accidents, not against a program that wants
// to leak a secret. It misses:
//   - a value the program encodes (base64, hex, URL-escaping, reversed,
//     upper-cased) or computes from the secret;
//   - a value printed with characters in between (one character a line,
//     colour codes, a progress bar redrawing over it);
//   - the first bytes of a value at the very end of the output: when the
//     stream ends on a proper prefix of a value, Flush passes those bytes
//     on as they are, since they are not the value.
//
// A short value (a PIN) is masked wherever its bytes appear, in output that
// has nothing to do with the secret too.
//
// A value's trailing line ends ("\r", "\n") are not part of what is masked:
// a file secret often ends in a newline that the program's print does not
// repeat.
package secrets
