package profiles

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hermes/hermes/fsstore"
)

// configLock is the sidecar lock of config.yaml's rewrites: two of them at
// once would each lose the other's change.
const configLock = ".config.lock"

// AddMCPServer adds server name to mcp_servers in profile p's config.yaml,
// keeping the file's other keys and its comments. A name already there is
// ErrRefused; a file that does not parse is ErrInvalid and is left as it
// is. The new file is written atomically.
func AddMCPServer(p Profile, name string, s MCPServer, timeout time.Duration) error {
	return editConfig(p, timeout, func(root *yaml.Node) error {
		servers := mapValue(root, "mcp_servers")
		if servers == nil {
			servers = &yaml.Node{Kind: yaml.MappingNode}
			root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "mcp_servers"}, servers)
		}
		if servers.Kind != yaml.MappingNode {
			return fsstore.Invalidf("mcp_servers in config.yaml is not a mapping")
		}
		if mapValue(servers, name) != nil {
			return fsstore.Refusedf("MCP server %s is already in mcp_servers (hermes mcp remove %s first)", name, name)
		}
		var v yaml.Node
		if err := v.Encode(s); err != nil {
			return err
		}
		servers.Style = 0 // a flow-style {} grows into a block
		servers.Content = append(servers.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, &v)
		return nil
	})
}

// RemoveMCPServer removes server name from mcp_servers in profile p's
// config.yaml as AddMCPServer adds one; a name not there is
// ErrNotFound. An mcp_servers left empty is removed.
func RemoveMCPServer(p Profile, name string, timeout time.Duration) error {
	return editConfig(p, timeout, func(root *yaml.Node) error {
		servers := mapValue(root, "mcp_servers")
		i := -1
		if servers != nil && servers.Kind == yaml.MappingNode {
			i = keyIndex(servers, name)
		}
		if i < 0 {
			return fsstore.NotFoundf("MCP server %s is not in mcp_servers", name)
		}
		servers.Content = append(servers.Content[:i], servers.Content[i+2:]...)
		if len(servers.Content) == 0 {
			j := keyIndex(root, "mcp_servers")
			root.Content = append(root.Content[:j], root.Content[j+2:]...)
		}
		return nil
	})
}

// editConfig rewrites p's config.yaml with edit's change to its
// top-level mapping, under the config lock. The result must load as a
// Config, or nothing is written. A config.yaml or a directory of p that
// another account could write is refused (an *UnsafeError), as Load
// refuses it: the rewrite would make whatever that account put there the
// user's own. The commands the file names are not judged, so that a
// server whose command is unsafe can be removed.
func editConfig(p Profile, timeout time.Duration, edit func(root *yaml.Node) error) error {
	unsafe, err := checkDirs(p)
	if err != nil {
		return err
	}
	if len(unsafe) > 0 {
		return unsafe[0]
	}
	dir := p.Dir()
	if err := fsstore.EnsureDir(dir); err != nil {
		return err
	}
	unlock, err := fsstore.Lock(filepath.Join(dir, configLock), timeout)
	if err != nil {
		return err
	}
	defer unlock()
	path := filepath.Join(dir, "config.yaml")
	u, err := checkFile(path, "config.yaml")
	if err != nil {
		return err
	}
	if u != nil {
		return u
	}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fsstore.Invalidf("%s: %w", path, err)
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fsstore.Invalidf("%s: the top level is not a mapping", path)
	}
	if err := edit(root); err != nil {
		return err
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	var check Config
	dec := yaml.NewDecoder(bytes.NewReader(out.Bytes()))
	dec.KnownFields(true)
	if err := dec.Decode(&check); err != nil {
		return fsstore.Invalidf("%s: %w", path, err)
	}
	return fsstore.WriteFileAtomic(path, out.Bytes())
}

func keyIndex(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if i := keyIndex(m, key); i >= 0 {
		return m.Content[i+1]
	}
	return nil
}
