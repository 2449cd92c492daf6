package profiles

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// checkShape walks config.yaml's document against the type it decodes
// into, before it is decoded, and returns the first place where they
// disagree in the user's terms: the line, the key path as written
// (agent.max_step), what is wrong, and the valid keys or the nearest one.
// The decoder's own errors name Go types (struct { MaxSteps int … },
// !!str); this says the same in the config's words. A type that decodes
// itself (yaml.Unmarshaler) is left to its own decoding.
func checkShape(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			if err := checkShape(c, t, path); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return checkShape(n.Alias, t, path)
	}
	if n.Kind == 0 || isNull(n) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[time.Duration]() {
		return nil // yaml.v3 reads "10s" into it: the decoder judges it
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return shapeErr(n, path, "must be a mapping of settings (%s: …), not %s", firstKey(t), shown(n))
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				return unknownKey(k, join(path, k.Value), path, fields)
			}
			if err := checkShape(v, f.Type, join(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return shapeErr(n, path, "must be a mapping (name: …), not %s", shown(n))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkShape(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return shapeErr(n, path, "must be a list ([a, b], or one \"- item\" a line), not %s", shown(n))
		}
		for i, c := range n.Content {
			if err := checkShape(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return shapeErr(n, path, "must be a text, not %s", shown(n))
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return shapeErr(n, path, ": %s is not true or false", shown(n))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			return shapeErr(n, path, ": %s is not a whole number", shown(n))
		}
	case reflect.Float32, reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
			return shapeErr(n, path, ": %s is not a number", shown(n))
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// yamlFields are a struct's fields by their YAML key.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	fields := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f
	}
	return fields
}

// firstKey is a struct's first setting, for an example.
func firstKey(t reflect.Type) string {
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			return name
		}
	}
	return "key"
}

func unknownKey(k *yaml.Node, full, parent string, fields map[string]reflect.StructField) error {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	if near := Nearest(k.Value, names); near != "" {
		return shapeErr(k, full, " is not a setting (did you mean %s?)", near)
	}
	slices.Sort(names)
	owner := "the top level's"
	if parent != "" {
		owner = parent + "'s"
	}
	return shapeErr(k, full, " is not a setting; %s settings are %s", owner, strings.Join(names, ", "))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// shown is a node as the message quotes it: a scalar's text, quoted when
// it is a string, or what kind of thing it is.
func shown(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if n.Tag == "!!str" {
		return strconv.Quote(n.Value)
	}
	return n.Value
}

// shapeErr is "line N: PATH<what>": what begins with ": " or " " as
// the sentence needs, or without either after "must".
func shapeErr(n *yaml.Node, path, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if strings.HasPrefix(what, "must") {
		what = " " + what
	}
	if path == "" {
		path = "the file"
	}
	return fmt.Errorf("line %d: %s%s", n.Line, path, what)
}
