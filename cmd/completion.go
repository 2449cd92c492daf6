package cmd

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The bash and zsh scripts ask the binary itself for completions
// (--generate-bash-completion), so they stay right as commands change.
// They follow the scripts shipped in urfave/cli's autocomplete folder.
const bashCompletion = `# bash completion for hermes: source <(hermes completion bash)
_hermes_complete() {
  local cur words
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  words=("${COMP_WORDS[@]:0:$COMP_CWORD}")
  local request="${words[*]} --generate-bash-completion"
  if [[ "$cur" == "-"* ]]; then
    request="${words[*]} ${cur} --generate-bash-completion"
  fi
  local opts
  opts=$(eval "${request}" 2>/dev/null)
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}
complete -o bashdefault -o default -F _hermes_complete hermes
`

const zshCompletion = `#compdef hermes
# zsh completion for hermes: hermes completion zsh > "${fpath[1]}/_hermes"
_hermes() {
  local -a opts
  local cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _hermes hermes
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
				var s string
				if s, err = c.App.ToFishCompletion(); err == nil {
					_, err = fmt.Fprint(c.App.Writer, s)
				}
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
