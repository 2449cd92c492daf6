package skills

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/hermes/hermes/fsstore"
)

// FileName is the file that makes a directory a skill.
const FileName = "SKILL.md"

// Bounds of a skill's frontmatter, as the Agent Skills format sets them.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
	// MaxSkillFile bounds a SKILL.md that is read or written.
	MaxSkillFile = 1 << 20
)

// Meta is what a SKILL.md's frontmatter says: its name, its description
// and, optionally, the tools it may use (allowed-tools, a list or a
// comma-separated string). Other keys (license, metadata) are kept in
// the file and not read.
type Meta struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	AllowedTools []string `json:"allowed_tools,omitempty"`
}

// CheckName refuses a name that cannot be a skill's directory: empty,
// longer than MaxNameLen bytes, a path separator, "..", a leading dot, a
// control character (fsstore.CheckID's rules).
func CheckName(name string) error {
	if err := fsstore.CheckID("skill name", name); err != nil {
		return err
	}
	if len(name) > MaxNameLen {
		return fsstore.Invalidf("skill name %q is %d bytes; the limit is %d", name, len(name), MaxNameLen)
	}
	return nil
}

// Parse reads the frontmatter of a SKILL.md: a first line "---", YAML,
// and a line "---" closing it, then the body. A file that is not so, or
// whose name or description is missing or too long, is ErrInvalid naming
// the line and the reason ("SKILL.md line 3: …").
func Parse(data []byte) (Meta, string, error) {
	bad := func(line int, format string, args ...any) (Meta, string, error) {
		return Meta{}, "", fsstore.Invalidf("%s line %d: %s", FileName, line, fmt.Sprintf(format, args...))
	}
	if !utf8.Valid(data) {
		return bad(1, "not UTF-8 text")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	text = strings.TrimPrefix(text, "\uFEFF")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return bad(1, "a SKILL.md starts with a line of --- and YAML frontmatter (name, description)")
	}
	var front string
	end := -1
	for off := 0; off <= len(rest); {
		line, _, found := strings.Cut(rest[off:], "\n")
		if strings.TrimRight(line, " \t") == "---" {
			front, end = rest[:off], off+len(line)
			break
		}
		if !found {
			break
		}
		off += len(line) + 1
	}
	if end < 0 {
		return bad(1, "the frontmatter has no closing line of ---")
	}
	body := strings.TrimPrefix(rest[end:], "\n")
	var raw struct {
		Name         any `yaml:"name"`
		Description  any `yaml:"description"`
		AllowedTools any `yaml:"allowed-tools"`
	}
	var node yaml.Node
	if err := yaml.Unmarshal([]byte(front), &node); err != nil {
		return bad(lineOf(err), "frontmatter is not YAML: %s", yamlReason(err))
	}
	if err := node.Decode(&raw); err != nil {
		return bad(lineOf(err), "frontmatter is not a mapping of keys: %s", yamlReason(err))
	}
	keyLine := func(key string) int {
		if len(node.Content) > 0 {
			m := node.Content[0]
			for i := 0; i+1 < len(m.Content); i += 2 {
				if m.Content[i].Value == key {
					return m.Content[i].Line + 1
				}
			}
		}
		return 1
	}
	var meta Meta
	name, ok := raw.Name.(string)
	if !ok || strings.TrimSpace(name) == "" {
		return bad(keyLine("name"), "the frontmatter needs a name (text)")
	}
	meta.Name = strings.TrimSpace(name)
	if err := CheckName(meta.Name); err != nil {
		return bad(keyLine("name"), "%v", err)
	}
	desc, ok := raw.Description.(string)
	if !ok || strings.TrimSpace(desc) == "" {
		return bad(keyLine("description"), "the frontmatter needs a description (text): what the skill does and when to use it")
	}
	meta.Description = strings.TrimSpace(desc)
	if n := utf8.RuneCountInString(meta.Description); n > MaxDescriptionLen {
		return bad(keyLine("description"), "the description is %d characters; the limit is %d", n, MaxDescriptionLen)
	}
	switch v := raw.AllowedTools.(type) {
	case nil:
	case string:
		for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
			meta.AllowedTools = append(meta.AllowedTools, f)
		}
	case []any:
		for _, t := range v {
			s, ok := t.(string)
			if !ok {
				return bad(keyLine("allowed-tools"), "allowed-tools holds %v, not a tool name", t)
			}
			meta.AllowedTools = append(meta.AllowedTools, s)
		}
	default:
		return bad(keyLine("allowed-tools"), "allowed-tools is a list of tool names or one comma-separated line")
	}
	return meta, body, nil
}

// lineOf is the line of the SKILL.md a YAML error names (the frontmatter
// starts on line 2), or 1.
func lineOf(err error) int {
	var n int
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		if _, e := fmt.Sscanf(msg[i:], "line %d", &n); e == nil {
			return n + 1
		}
	}
	return 1
}

// yamlReason is a YAML error without its "yaml: line N:" prefix.
func yamlReason(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if strings.HasPrefix(msg, "line ") {
		if _, after, ok := strings.Cut(msg, ": "); ok {
			return after
		}
	}
	return msg
}

// Head is the start of a SKILL.md that holds its frontmatter, for a
// listing that needs only the name and description: at most headLen
// bytes, cut after the closing line when it is found.
const headLen = 8 << 10

// ParseHead parses the frontmatter in the first bytes of a SKILL.md.
func ParseHead(head []byte) (Meta, error) {
	if len(head) >= headLen {
		if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
			head = head[:i+1]
		}
	}
	meta, _, err := Parse(head)
	if err != nil && len(head) >= headLen && !bytes.Contains(head[4:], []byte("\n---")) {
		return Meta{}, fsstore.Invalidf("%s line 1: the frontmatter is longer than %d bytes", FileName, headLen)
	}
	return meta, err
}
