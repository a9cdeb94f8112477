package agentpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// A policy file that remember rewrites is read whole, changed as a YAML
// node tree (JSON is YAML) and written back in its own format: a JSON file
// stays JSON, a YAML file stays YAML with its comments. The new text goes
// to a temporary file beside it, with the old file's mode and owner, which
// then replaces it by rename: a reader sees the old file or the new one,
// never half of one, and a symbolic link is refused rather than followed,
// so remember never overwrites a file it was not named.

// fileFormat is how a policy file is written.
type fileFormat int

const (
	formatYAML fileFormat = iota
	formatJSON
)

func (f fileFormat) String() string {
	if f == formatJSON {
		return "JSON"
	}
	return "YAML"
}

// policyFile is a policy file read for rewriting.
type policyFile struct {
	name   string
	data   []byte      // nil when the file does not exist yet
	info   fs.FileInfo // nil when the file does not exist yet
	format fileFormat
}

// readPolicyFile reads file for rewriting. A missing file is no error: it
// will be created, in JSON when its name ends in .json.
func readPolicyFile(file string) (*policyFile, error) {
	pf := &policyFile{name: file}
	st, err := os.Lstat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		pf.format = formatOf(nil, file)
		return pf, nil
	case err != nil:
		return nil, fmt.Errorf("policy: %w", err)
	case st.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("policy %s is a symbolic link: remember replaces the file rather than write through a link, so name the file it points to", file)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("policy %s is not a regular file", file)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(st, opened) {
		return nil, fmt.Errorf("policy %s changed while being opened", file)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPolicy+1))
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", file, err)
	}
	if len(data) > maxPolicy {
		return nil, fmt.Errorf("policy %s: larger than %d bytes", file, maxPolicy)
	}
	pf.data, pf.info, pf.format = data, st, formatOf(data, file)
	return pf, nil
}

// formatOf is JSON for a text that is a JSON object, and for a blank or
// missing file named *.json; YAML otherwise.
func formatOf(data []byte, name string) fileFormat {
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		if strings.EqualFold(filepath.Ext(name), ".json") {
			return formatJSON
		}
		return formatYAML
	}
	if t[0] == '{' && json.Valid(t) {
		return formatJSON
	}
	return formatYAML
}

// encode writes doc in the file's format. keep is text kept above a YAML
// document (the comments of a file that held nothing else).
func (pf *policyFile) encode(doc *yaml.Node, keep []byte) ([]byte, error) {
	if pf.format == formatJSON {
		var compact bytes.Buffer
		if err := writeJSON(&compact, doc); err != nil {
			return nil, fmt.Errorf("policy %s: writing JSON: %w", pf.name, err)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
			return nil, fmt.Errorf("policy %s: writing JSON: %w", pf.name, err)
		}
		out.WriteByte('\n')
		return out.Bytes(), nil
	}
	var buf bytes.Buffer
	buf.Write(keep)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("policy %s: writing YAML: %w", pf.name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("policy %s: writing YAML: %w", pf.name, err)
	}
	return buf.Bytes(), nil
}

// writeJSON writes a node tree read from JSON back as compact JSON, keys
// in their order. Comments are dropped (JSON has none); anything JSON
// cannot hold (an alias, a non-scalar key) is an error.
func writeJSON(w *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return errors.New("not one document")
		}
		return writeJSON(w, n.Content[0])
	case yaml.MappingNode:
		w.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a key that is not a string", k.Line)
			}
			if i > 0 {
				w.WriteByte(',')
			}
			w.Write(jsonString(n.Content[i].Value))
			w.WriteByte(':')
			if err := writeJSON(w, n.Content[i+1]); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	case yaml.SequenceNode:
		w.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeJSON(w, c); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			w.WriteString("null")
		case "!!bool", "!!int", "!!float":
			if !json.Valid([]byte(n.Value)) {
				return fmt.Errorf("line %d: %q is no JSON value", n.Line, n.Value)
			}
			w.WriteString(n.Value)
		default:
			w.Write(jsonString(n.Value))
		}
	default:
		return fmt.Errorf("line %d: an alias, which JSON cannot hold", n.Line)
	}
	return nil
}

// jsonString is s as a JSON string, with <, > and & as themselves.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// replace writes data to a temporary file beside the policy file, with
// its mode and owner (0644 and the caller's for a new file), and renames
// it over the file.
func (pf *policyFile) replace(data []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(pf.name), "."+filepath.Base(pf.name)+".*.tmp")
	if err != nil {
		return fmt.Errorf("policy %s: %w", pf.name, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("policy %s: %w", pf.name, err)
		}
	}()
	mode := fs.FileMode(0o644)
	if pf.info != nil {
		mode = pf.info.Mode().Perm()
		if err := keepOwner(tmp, pf.info); err != nil {
			return err
		}
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil { // CreateTemp made it 0600
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), pf.name)
}
