package cmd

import (
	"regexp"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// placeholders name what a flag's value is, by flag name, where urfave/cli
// would print "value": `--limit N`, `--since DATE`. A flag whose usage
// holds a backquoted word names its own (`--at SEQ` of sessions fork,
// `--at TIME` of kanban create), as urfave/cli reads it.
var placeholders = map[string]string{
	"addr": "ADDR", "after": "CURSOR", "approval": "MODE", "assignee": "NAME", "author": "NAME",
	"base-url": "URL", "bearer-token-env": "VAR", "body": "TEXT", "body-file": "FILE",
	"catch-up": "POLICY", "claim-ttl": "DURATION", "content": "TEXT", "count": "N", "cwd": "DIR",
	"drain-timeout": "DURATION", "env": "KEY=VALUE", "every": "DURATION", "exec-command": "COMMAND", "format": "FORMAT", "fs-timeout": "DURATION",
	"grace": "DURATION", "header": "KEY=VALUE", "home": "DIR", "id": "ID", "idempotency-key": "KEY", "idle-timeout": "DURATION",
	"interval": "DURATION", "keep": "N", "key": "KEY", "keep-last": "N", "last": "N", "limit": "N",
	"lock-timeout": "DURATION", "max-age": "DURATION", "max-bytes": "N", "max-retries": "N",
	"max-workers": "N", "model": "MODEL", "name": "NAME", "older-than": "AGE", "parent": "TASK", "priority": "N",
	"profile": "NAME", "prompt": "TEXT", "provider": "NAME", "query": "PROMPT", "reason": "TEXT",
	"result": "TEXT", "resume": "SESSION", "resume-on-respawn": "BOOL", "role": "ROLE",
	"schedule": "SPEC", "session": "SESSION", "signal": "SIGNAL", "since": "WHEN", "sort": "KEY",
	"source": "SOURCE", "startup-timeout": "DURATION", "state": "STATE", "status": "STATUS",
	"system": "TEXT", "tail": "N", "timeout": "DURATION", "title": "TITLE", "to": "SEQ",
	"tool-timeout": "DURATION", "tools": "LIST", "ttl": "DURATION", "tz": "ZONE", "until": "WHEN",
	"url": "URL",
}

// valueName is what f's value is called in help and the man page ("" for a
// switch), and f's usage as printed: a backquoted word of the usage is the
// name, its backquotes dropped.
func valueName(f cli.Flag) (name, usage string) {
	d, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return "", ""
	}
	usage = d.GetUsage()
	if before, rest, ok := strings.Cut(usage, "`"); ok {
		if name, after, ok := strings.Cut(rest, "`"); ok {
			return name, before + name + after
		}
	}
	if !d.TakesValue() {
		return "", usage
	}
	return placeholders[f.Names()[0]], usage
}

// withPlaceholder puts f's value name where urfave/cli's help line s says
// "value".
func withPlaceholder(f cli.Flag, s string) string {
	name, _ := valueName(f)
	if name == "" {
		return s
	}
	head, tail, _ := strings.Cut(s, "\t")
	return valueWord().ReplaceAllString(head, " "+name) + "\t" + tail
}

// valueWord is compiled when help is first printed, not at every start.
var valueWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(` value\b`) })
