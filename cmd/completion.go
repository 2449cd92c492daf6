package cmd

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The scripts ask the binary itself for candidates (hermes __complete,
// complete.go), so they stay right as commands change, and complete
// records (sessions, tasks, board tasks, jobs, servers, profiles) too.
const bashCompletion = `# bash completion for hermes: source <(hermes completion bash)
_hermes_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}" IFS=$'\n'
  COMPREPLY=($("${COMP_WORDS[0]}" __complete -- "${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null))
}
complete -o bashdefault -o default -F _hermes_complete hermes
`

const zshCompletion = `#compdef hermes
# zsh completion for hermes: hermes completion zsh > "${fpath[1]}/_hermes"
_hermes() {
  local -a cands
  cands=("${(@f)$(${words[1]} __complete -- "${(@)words[2,CURRENT-1]}" "${words[CURRENT]}" 2>/dev/null)}")
  if [[ -n "${cands[1]}" ]]; then
    compadd -a cands
  else
    _files
  fi
}
compdef _hermes hermes
`

const fishCompletion = `# fish completion for hermes: hermes completion fish > ~/.config/fish/completions/hermes.fish
complete -c hermes -f -a '(hermes __complete -- (commandline -opc)[2..-1] (commandline -ct))'
`

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Action: func(c *cli.Context) error {
			shell, err := oneArg(c, "shell (bash, zsh or fish)")
			if err != nil {
				return err
			}
			switch shell {
			case "bash":
				_, err = fmt.Fprint(c.App.Writer, bashCompletion)
			case "zsh":
				_, err = fmt.Fprint(c.App.Writer, zshCompletion)
			case "fish":
				_, err = fmt.Fprint(c.App.Writer, fishCompletion)
			default:
				return usagef("unknown shell %q (bash, zsh or fish)", shell)
			}
			return err
		},
	}
}

func manCommand() *cli.Command {
	return &cli.Command{
		Name:      "man",
		Usage:     "print the manual page (roff): hermes man | man -l -",
		ArgsUsage: " ",
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("man takes no arguments")
			}
			_, err := fmt.Fprint(c.App.Writer, manPage(c.App, 1))
			return err
		},
	}
}
