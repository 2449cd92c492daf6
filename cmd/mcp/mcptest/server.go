// Package mcptest is an MCP server over stdio, built on the Go SDK, for
// hermes's tests: tools that answer, fail, hang, crash and report their
// process, and start-up faults chosen by environment variables.
//
//   - MCPTEST_STARTS names a file that gets a line at each start.
//   - MCPTEST_ENVIRON names a file that gets the server's environment,
//     one variable a line.
//   - MCPTEST_FAULT: "exit" writes to stderr and exits 1 before it
//     answers; "hang" never answers.
//   - MCPTEST_NO_ECHO: the echo tool is not listed (nor answered).
//   - MCPTEST_LINGER: the server does not exit at the end of its input,
//     as some do not; only a signal ends it.
package mcptest

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type textArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type none struct{}

// Main serves until its input ends, then exits.
func Main() {
	if path := os.Getenv("MCPTEST_STARTS"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
		}
	}
	if path := os.Getenv("MCPTEST_ENVIRON"); path != "" {
		os.WriteFile(path, []byte(strings.Join(os.Environ(), "\n")+"\n"), 0o600)
	}
	switch os.Getenv("MCPTEST_FAULT") {
	case "exit":
		fmt.Fprintln(os.Stderr, "mcptest: cannot open the database: permission denied")
		os.Exit(1)
	case "hang":
		fmt.Fprintln(os.Stderr, "mcptest: waiting forever")
		select {}
	}
	if err := NewServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(2)
	}
	if os.Getenv("MCPTEST_LINGER") != "" {
		select {}
	}
}

// NewServer is the test server, to serve over any transport.
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, nil)
	if os.Getenv("MCPTEST_NO_ECHO") == "" {
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."}, func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	}
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("the tool failed on purpose")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never returns until cancelled."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits the server."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "mcptest: crashing on purpose")
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Adds the tool grown, which the server announces."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: "grown", Description: "Added by grow."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil, nil
		})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added grown"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "The server's process id."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "mixed.content", Description: "Text, an image and a resource."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a picture:"},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte(strings.Repeat("x", 10))},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "hello"}},
		}}, nil, nil
	})
	return s
}
