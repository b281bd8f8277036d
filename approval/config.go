package approval

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// readAllowList returns the approval.allow list of a YAML file; a missing
// file is an empty list.
func readAllowList(file string) ([]string, error) {
	doc, err := readYAML(file)
	if err != nil || doc == nil {
		return nil, err
	}
	seq := allowNode(doc, false)
	if seq == nil {
		return nil, nil
	}
	var out []string
	for _, n := range seq.Content {
		if n.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("approval: %s: approval.allow: line %d: want a string", file, n.Line)
		}
		out = append(out, n.Value)
	}
	return out, nil
}

// readYAML parses file into a document node; nil when the file is missing
// or empty.
func readYAML(file string) (*yaml.Node, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("approval: reading config: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("approval: parsing %s: %w", file, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("approval: %s: want a mapping at the top level", file)
	}
	return &doc, nil
}

// allowNode finds the approval.allow sequence of doc, creating the keys
// when create is set.
func allowNode(doc *yaml.Node, create bool) *yaml.Node {
	approval := mapValue(doc.Content[0], "approval", yaml.MappingNode, create)
	if approval == nil {
		return nil
	}
	return mapValue(approval, "allow", yaml.SequenceNode, create)
}

func mapValue(m *yaml.Node, key string, kind yaml.Kind, create bool) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			if v.Kind == kind {
				return v
			}
			if create && v.Kind == yaml.ScalarNode && (v.Tag == "!!null" || v.Value == "") {
				*v = yaml.Node{Kind: kind}
				return v
			}
			return nil
		}
	}
	if !create {
		return nil
	}
	v := &yaml.Node{Kind: kind}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	return v
}

// appendAllow adds glob to the approval.allow list of file, keeping
// everything else in the file as it is. The file is read again here, so
// edits made since the Gate was built are not lost, and replaced
// atomically.
func appendAllow(file, glob string) error {
	doc, err := readYAML(file)
	if err != nil {
		return err
	}
	if doc == nil {
		doc = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	seq := allowNode(doc, true)
	if seq == nil {
		return fmt.Errorf("approval: %s: approval.allow is not a list", file)
	}
	for _, n := range seq.Content {
		if n.Value == glob {
			return nil
		}
	}
	seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: glob, Style: yaml.DoubleQuotedStyle})
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("approval: encoding %s: %w", file, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("approval: encoding %s: %w", file, err)
	}
	return writeAtomic(file, buf.Bytes())
}

func writeAtomic(file string, data []byte) error {
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(file); err == nil {
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".approval-*.tmp")
	if err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("approval: writing %s: %w", file, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("approval: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("approval: writing %s: %w", file, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	return nil
}

// EscapeGlob quotes the glob characters of s, so that the glob matches s
// and nothing else.
func EscapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r == '*' || r == '?' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// globMatch matches s against a glob where "*" is any text (slashes
// included), "?" one character, and "\" quotes the next character.
func globMatch(glob, s string) bool {
	gi, si := 0, 0
	starG, starS := -1, 0
	for si < len(s) {
		if gi < len(glob) {
			switch c := glob[gi]; {
			case c == '*':
				starG, starS = gi, si
				gi++
				continue
			case c == '?':
				gi++
				si++
				continue
			case c == '\\' && gi+1 < len(glob):
				if glob[gi+1] == s[si] {
					gi += 2
					si++
					continue
				}
			case c == s[si]:
				gi++
				si++
				continue
			}
		}
		if starG < 0 {
			return false
		}
		starS++
		gi, si = starG+1, starS
	}
	for gi < len(glob) && glob[gi] == '*' {
		gi++
	}
	return gi == len(glob)
}
