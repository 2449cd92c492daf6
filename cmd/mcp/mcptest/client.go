package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientMain is an MCP client for hermes's scripts: it runs the server
// its arguments name (a command over stdio) and makes the calls its
// input lists, one a line: "tools" prints the names of the tools offered,
// one a line; "NAME JSON" calls tool NAME with the arguments JSON and
// prints "NAME: TEXT", or "NAME: error result: TEXT" for an isError
// result. It exits 1 when the server cannot be reached or a call fails
// outside its result.
func ClientMain() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mcp-client CMD ARGS… < calls")
		os.Exit(2)
	}
	ctx := context.Background()
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcptest-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-client:", err)
		os.Exit(1)
	}
	defer cs.Close()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		if line == "tools" {
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				fmt.Fprintln(os.Stderr, "mcp-client:", err)
				os.Exit(1)
			}
			for _, t := range res.Tools {
				fmt.Println(t.Name)
			}
			continue
		}
		name, args, _ := strings.Cut(line, " ")
		var params map[string]any
		if strings.TrimSpace(args) != "" {
			if err := json.Unmarshal([]byte(args), &params); err != nil {
				fmt.Fprintf(os.Stderr, "mcp-client: %s: %v\n", name, err)
				os.Exit(2)
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: params})
		if err != nil {
			fmt.Fprintf(os.Stderr, "mcp-client: %s: %v\n", name, err)
			os.Exit(1)
		}
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		prefix := name + ": "
		if res.IsError {
			prefix += "error result: "
		}
		fmt.Println(prefix + strings.Join(text, "\n"))
	}
}
