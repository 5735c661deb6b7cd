package boxer_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestOpenAPITypeScriptClient generates a TypeScript client's types from
// server/openapi.json with the pinned openapi-typescript of package.json,
// as a client's author would, and compiles them with the pinned tsc
// (strict, no emit) beside a program that sends each operation's smallest
// request: its JSON body and query with only the fields the document
// requires. A field the server defaults but the generated types require
// (a schema default makes openapi-typescript type it as required) fails it.
func TestOpenAPITypeScriptClient(t *testing.T) {
	const gen, tsc = "node_modules/.bin/openapi-typescript", "node_modules/.bin/tsc"
	for _, bin := range []string{gen, tsc} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%s is not installed (%v): run 'make test-deps'", bin, err)
		}
	}
	dir := t.TempDir()
	api := filepath.Join(dir, "api.ts")
	if out, err := exec.Command(gen, "server/openapi.json", "--output", api).CombinedOutput(); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, out)
	}
	doc, err := os.ReadFile("server/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	program, err := smallestRequests(doc)
	if err != nil {
		t.Fatal(err)
	}
	use := filepath.Join(dir, "use.ts")
	if err := os.WriteFile(use, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tsc, "--strict", "--noEmit", "--target", "es2022", "--module", "esnext",
		"--moduleResolution", "bundler", "--noUnusedLocals", "false", api, use)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("tsc on the generated client: %v\n%s\nthe program:\n%s", err, out, program)
	}
}

// openAPISchema is the part of a schema smallestValue reads.
type openAPISchema struct {
	Ref        string                    `json:"$ref"`
	Type       string                    `json:"type"`
	Enum       []any                     `json:"enum"`
	Required   []string                  `json:"required"`
	Properties map[string]*openAPISchema `json:"properties"`
	OneOf      []*openAPISchema          `json:"oneOf"`
	AnyOf      []*openAPISchema          `json:"anyOf"`
	AllOf      []*openAPISchema          `json:"allOf"`
}

// smallestRequests writes a TypeScript program that types, for each
// operation, its smallest JSON body and query as the generated client's
// operations type says they are.
func smallestRequests(data []byte) (string, error) {
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]*openAPISchema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("server/openapi.json: %w", err)
	}
	var b strings.Builder
	b.WriteString("import type { operations } from \"./api\";\n\n")
	var paths []string
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		for _, method := range []string{"get", "put", "post", "delete", "patch"} {
			raw, ok := doc.Paths[p][method]
			if !ok {
				continue
			}
			var op struct {
				OperationID string `json:"operationId"`
				Parameters  []struct {
					Name     string         `json:"name"`
					In       string         `json:"in"`
					Required bool           `json:"required"`
					Schema   *openAPISchema `json:"schema"`
				} `json:"parameters"`
				RequestBody *struct {
					Required bool `json:"required"`
					Content  map[string]struct {
						Schema *openAPISchema `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return "", fmt.Errorf("%s %s: %w", method, p, err)
			}
			if op.OperationID == "" {
				return "", fmt.Errorf("%s %s has no operationId: a generated client cannot name it", method, p)
			}
			if body := op.RequestBody; body != nil && body.Content["application/json"].Schema != nil {
				v := smallestValue(body.Content["application/json"].Schema, doc.Components.Schemas, 0)
				js, _ := json.Marshal(v)
				req := fmt.Sprintf("operations[%q][\"requestBody\"]", op.OperationID)
				if !body.Required {
					req = "NonNullable<" + req + ">"
				}
				fmt.Fprintf(&b, "export const %sBody: %s[\"content\"][\"application/json\"] = %s;\n", op.OperationID, req, js)
			}
			query := map[string]any{}
			for _, prm := range op.Parameters {
				if prm.In == "query" && prm.Required {
					query[prm.Name] = smallestValue(prm.Schema, doc.Components.Schemas, 0)
				}
			}
			if len(query) > 0 {
				js, _ := json.Marshal(query)
				fmt.Fprintf(&b, "export const %sQuery: operations[%q][\"parameters\"][\"query\"] = %s;\n", op.OperationID, op.OperationID, js)
			}
		}
	}
	return b.String(), nil
}

// smallestValue is a value of schema s with only its required fields.
func smallestValue(s *openAPISchema, schemas map[string]*openAPISchema, depth int) any {
	if s == nil || depth > 20 {
		return nil
	}
	if name, ok := strings.CutPrefix(s.Ref, "#/components/schemas/"); ok {
		return smallestValue(schemas[name], schemas, depth+1)
	}
	for _, alt := range [][]*openAPISchema{s.OneOf, s.AnyOf, s.AllOf} {
		if len(alt) > 0 {
			return smallestValue(alt[0], schemas, depth+1)
		}
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch s.Type {
	case "string":
		return "x"
	case "integer", "number":
		return 1
	case "boolean":
		return false
	case "array":
		return []any{}
	}
	obj := map[string]any{}
	for _, name := range s.Required {
		obj[name] = smallestValue(s.Properties[name], schemas, depth+1)
	}
	return obj
}
