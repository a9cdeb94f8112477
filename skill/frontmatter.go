package skill

import (
	"bytes"
	"errors"
	"fmt"
)

// Size limits keep a hostile SKILL.md from costing time or memory. Real
// skills are a few kilobytes.
const (
	maxFileSize        = 1 << 20  // whole SKILL.md
	maxFrontmatterSize = 64 << 10 // the YAML between the two '---' lines
)

var errNoFrontmatter = errors.New("no frontmatter: SKILL.md must start with a '---' line, then YAML, then a closing '---' line")

// splitFrontmatter returns the YAML between the first two '---' lines and the
// body after the closing line. The YAML starts on line 2 of the file.
func splitFrontmatter(data []byte) (yamlText, body []byte, err error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	if !isFence(first, "---") {
		return nil, nil, errNoFrontmatter
	}
	start := len(data) - len(rest)
	for off := start; off < len(data); {
		line, _, found := bytes.Cut(data[off:], []byte("\n"))
		if off-start > maxFrontmatterSize {
			return nil, nil, fmt.Errorf("frontmatter is larger than the limit of %d bytes", maxFrontmatterSize)
		}
		if isFence(line, "---") || isFence(line, "...") {
			next := off + len(line)
			if found {
				next++
			}
			return data[start:off], data[next:], nil
		}
		off += len(line) + 1
	}
	return nil, nil, errors.New("frontmatter is not closed: no '---' line after the opening one")
}

func isFence(line []byte, fence string) bool {
	return string(bytes.TrimRight(line, " \t\r")) == fence
}
