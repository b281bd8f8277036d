package config

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// decode reads YAML into cfg key by key, so that an unknown key or a wrong
// type is reported with the key's dotted path, its line and the file.
func decode(data []byte, path string, cfg *Config) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // empty file
	}
	return decodeStruct(doc.Content[0], reflect.ValueOf(cfg).Elem(), "", path)
}

func decodeStruct(n *yaml.Node, v reflect.Value, prefix, path string) error {
	if n.Kind != yaml.MappingNode {
		if n.Tag == "!!null" {
			return nil
		}
		name := strings.TrimSuffix(prefix, ".")
		if name == "" {
			name = "top level"
		}
		return fmt.Errorf("config: %s: line %d: %s must be a mapping", path, n.Line, name)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key := prefix + k.Value
		f, ok := fieldByTag(v, k.Value)
		if !ok {
			return fmt.Errorf("config: %s: line %d: unknown key %q (known: %s)", path, k.Line, key, strings.Join(knownKeys(v), ", "))
		}
		if err := decodeValue(val, f, key, path); err != nil {
			return err
		}
	}
	return nil
}

type setter interface{ Set(string) error }

func decodeValue(val *yaml.Node, f reflect.Value, key, path string) error {
	if s, ok := f.Addr().Interface().(setter); ok {
		if val.Kind != yaml.ScalarNode {
			return fmt.Errorf("config: %s: line %d: key %q: want a scalar", path, val.Line, key)
		}
		if err := s.Set(val.Value); err != nil {
			return fmt.Errorf("config: %s: line %d: key %q: %v", path, val.Line, key, err)
		}
		return nil
	}
	if f.Kind() == reflect.Struct {
		return decodeStruct(val, f, key+".", path)
	}
	if err := val.Decode(f.Addr().Interface()); err != nil {
		return fmt.Errorf("config: %s: line %d: key %q: want %s, got %q", path, val.Line, key, kindName(f), val.Value)
	}
	return nil
}

func kindName(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Slice:
		return "a list"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	}
	return "a " + v.Kind().String()
}

func fieldByTag(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		if tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; tag == name && tag != "-" {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func knownKeys(v reflect.Value) []string {
	var keys []string
	t := v.Type()
	for i := range t.NumField() {
		if tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
			keys = append(keys, tag)
		}
	}
	return keys
}
