package profiles

import (
	"strings"
	"testing"
)

// A config error names the key path as written, says what is wrong and
// suggests the valid key, never in Go's terms.
func TestConfigErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"agent:\n  max_step: 3\n", `line 2: agent.max_step is not a setting (did you mean max_steps?)`},
		{"provdier: openai\n", `line 1: provdier is not a setting (did you mean provider?)`},
		{"agent:\n  max_steps: abc\n", `line 2: agent.max_steps: "abc" is not a whole number`},
		{"agent: 3\n", `line 1: agent must be a mapping of settings (max_steps: …), not 3`},
		{"mcp_servers:\n  x:\n    comand: foo\n", `line 3: mcp_servers.x.comand is not a setting (did you mean command?)`},
		{"gateway:\n  models:\n    m: [1]\n", `line 3: gateway.models.m must be a mapping of settings`},
		{"gateway:\n  tools: read_file\n", `line 2: gateway.tools must be a list`},
		{"gateway:\n  instructions: maybe\n", `line 2: gateway.instructions: "maybe" is not true or false`},
		{"agent:\n  zzzzzzzz: 1\n", `line 2: agent.zzzzzzzz is not a setting; agent's settings are`},
	} {
		_, err := parseConfig("config.yaml", []byte(c.yaml))
		if err == nil {
			t.Errorf("%q: no error", c.yaml)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) {
			t.Errorf("%q: %s\nwant it to contain %s", c.yaml, msg, c.want)
		}
		for _, goWord := range []string{"struct {", "profiles.", "!!", "unmarshal"} {
			if strings.Contains(msg, goWord) {
				t.Errorf("%q: %s: Go's words (%s)", c.yaml, msg, goWord)
			}
		}
	}
	for _, ok := range []string{"", "provider: echo\n", "agent:\n  max_steps: 3\n  tools: [read_file]\n", "mcp_servers:\n  x:\n    command: foo\n    tools:\n      include: [a]\n", "kanban:\n  resume_on_respawn: false\n", "gateway:\n  models:\n    m:\n      provider: echo\n"} {
		if _, err := parseConfig("config.yaml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
