package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK validates a tool call's arguments against the tool's schema
// (toolForErr in server.go, through applySchema in tool.go), but says
// what went wrong in the validator's terms, after `validating
// "arguments": ` ("validating /properties/timeout: minimum: -5/1 is less than 0.000000", or
// "<invalid reflect.Value>" for a missing field). runbox checks the
// arguments first, against the same schemas, and refuses a bad call with
// a tool error that names the field, what was expected and what came.
// The SDK's validation still runs after it, on arguments that pass.

// argsMiddleware refuses a tools/call whose arguments do not fit the
// tool's schema, with a message for people.
func (s *Server) argsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
		if !ok || p == nil {
			return next(ctx, method, req)
		}
		schema := s.schemas[p.Name]
		if schema == nil {
			return next(ctx, method, req) // the SDK answers an unknown tool
		}
		if err := checkArgs(p.Name, schema, p.Arguments); err != nil {
			res := &mcp.CallToolResult{}
			res.SetError(err)
			return res, nil
		}
		return next(ctx, method, req)
	}
}

// ArgError is a tool call's argument that does not fit: Field names it
// ("" for the arguments as a whole) and Problem says what was expected.
type ArgError struct {
	Tool    string
	Field   string
	Problem string
}

func (e *ArgError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("runbox: %s: invalid arguments: %s", e.Tool, e.Problem)
	}
	return fmt.Sprintf("runbox: %s: invalid argument %s: %s", e.Tool, e.Field, e.Problem)
}

// checkArgs checks raw arguments against a tool's object schema.
func checkArgs(tool string, schema *jsonschema.Schema, raw json.RawMessage) error {
	fail := func(field, format string, a ...any) error {
		return &ArgError{Tool: tool, Field: field, Problem: fmt.Sprintf(format, a...)}
	}
	args := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
		if t[0] != '{' || json.Unmarshal(t, &args) != nil {
			return fail("", "expected an object of named arguments, got %s", describe(t))
		}
	}
	names := slices.Sorted(maps.Keys(schema.Properties))
	for name := range args {
		if schema.Properties[name] == nil {
			return fail("", "unknown argument %q; %s takes %s", name, tool, strings.Join(names, ", "))
		}
	}
	for _, name := range schema.Required {
		if _, ok := args[name]; !ok {
			return fail(name, "required: expected %s", expected(schema.Properties[name]))
		}
	}
	for _, name := range names {
		v, ok := args[name]
		if !ok {
			continue
		}
		if problem := checkValue(schema.Properties[name], v); problem != "" {
			return fail(name, "%s", problem)
		}
	}
	return nil
}

// checkValue says what is wrong with v for the property p ("" if nothing).
func checkValue(p *jsonschema.Schema, v json.RawMessage) string {
	want := expected(p)
	var x any
	if json.Unmarshal(v, &x) != nil {
		return "expected " + want + ", got malformed JSON"
	}
	types := p.Types
	if p.Type != "" {
		types = []string{p.Type}
	}
	if x == nil {
		if slices.Contains(types, "null") {
			return ""
		}
		return "expected " + want + ", got null"
	}
	switch val := x.(type) {
	case string:
		if !slices.Contains(types, "string") {
			return "expected " + want + ", got " + describe(v)
		}
		if p.MinLength != nil && len(val) < *p.MinLength {
			return "expected a non-empty string"
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, any(val)) {
			return "expected " + want + ", got " + strconv.Quote(val)
		}
	case float64:
		isInt := val == math.Trunc(val)
		if !slices.Contains(types, "number") && !(slices.Contains(types, "integer") && isInt) {
			return "expected " + want + ", got " + describe(v)
		}
		if p.Minimum != nil && val < *p.Minimum {
			return fmt.Sprintf("expected %s of at least %s, got %s", want, strconv.FormatFloat(*p.Minimum, 'f', -1, 64), strconv.FormatFloat(val, 'f', -1, 64))
		}
	case bool:
		if !slices.Contains(types, "boolean") {
			return "expected " + want + ", got " + describe(v)
		}
	case []any:
		if !slices.Contains(types, "array") {
			return "expected " + want + ", got an array"
		}
		if p.Items != nil {
			for i, item := range val {
				b, _ := json.Marshal(item)
				if problem := checkValue(p.Items, b); problem != "" {
					return fmt.Sprintf("item %d: %s", i, problem)
				}
			}
		}
	default:
		return "expected " + want + ", got an object"
	}
	return ""
}

// expected says in words what a property takes.
func expected(p *jsonschema.Schema) string {
	if p == nil {
		return "a value"
	}
	if len(p.Enum) > 0 {
		vals := make([]string, len(p.Enum))
		for i, v := range p.Enum {
			vals[i] = fmt.Sprint(v)
		}
		return "one of " + strings.Join(vals, ", ")
	}
	types := p.Types
	if p.Type != "" {
		types = []string{p.Type}
	}
	switch {
	case slices.Contains(types, "array"):
		if p.Items != nil {
			return "a list of " + strings.TrimPrefix(strings.TrimPrefix(expected(p.Items), "a "), "an ") + "s"
		}
		return "a list"
	case slices.Contains(types, "string"):
		return "a string"
	case slices.Contains(types, "integer"):
		return "a whole number"
	case slices.Contains(types, "number"):
		return "a number"
	case slices.Contains(types, "boolean"):
		return "true or false"
	}
	return "a value"
}

// describe names the kind of a JSON value, with the value when short.
func describe(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	short := string(v)
	if len(short) > 40 {
		short = short[:40] + "…"
	}
	switch {
	case len(v) == 0:
		return "nothing"
	case v[0] == '"':
		return "the string " + short
	case v[0] == '{':
		return "an object"
	case v[0] == '[':
		return "an array"
	case string(v) == "true" || string(v) == "false":
		return short
	case string(v) == "null":
		return "null"
	}
	return "the number " + short
}
