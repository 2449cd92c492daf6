// Package cmd is the hermes command line: a urfave/cli/v2 application with
// one file per noun. Actions are thin: they parse flags, call a store, and
// print. Errors are mapped to exit codes in exactly one place, exitCode.
package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/profiles"
)

// Exit codes: the scripting contract of DESIGN.md.
const (
	ExitOK       = 0
	ExitFailed   = 1
	ExitUsage    = 2
	ExitNotFound = 3
	ExitRefused  = 4
	ExitLock     = 5
)

// usageError is bad usage: an unknown flag, a missing argument.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCode maps an error to the exit-code table. It is the only place that
// does, and it looks through wrapping with errors.Is and errors.As.
// A lock wait that its caller called off (*fsstore.LockInterruptedError,
// only ever a tool call's, answered to the model) is no timeout: 1, as
// any cancelled work.
func exitCode(err error) int {
	var lockErr *fsstore.LockTimeoutError
	var usage usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &lockErr):
		return ExitLock
	case errors.As(err, &usage), errors.Is(err, fsstore.ErrInvalid):
		return ExitUsage
	case errors.Is(err, fsstore.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, fsstore.ErrRefused):
		return ExitRefused
	}
	var coder cli.ExitCoder
	if errors.As(err, &coder) {
		return coder.ExitCode()
	}
	return ExitFailed
}

// Run runs hermes with args and the given streams and returns the exit
// code. Messages go to stderr as "hermes: …"; data goes to stdout.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := NewApp(stdin, stdout, stderr)
	return finish(app, runApp(app, args))
}

// runApp runs app with args, checked, the global flags put first.
func runApp(app *cli.App, args []string) error {
	if err := checkUTF8(app, args); err != nil {
		return err
	}
	return app.Run(interspersed(app, args))
}

// finish says err on app's stderr and returns its exit code.
func finish(app *cli.App, err error) int {
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	var silent silentExit
	if !errors.As(err, &silent) {
		fmt.Fprintf(app.ErrWriter, "hermes: %s\n", errorText(err))
	}
	return code
}

// checkUTF8 refuses a command line with an argument that is not valid
// UTF-8. Every record is JSON, where such a byte would silently become
// U+FFFD, so the one check is made here, before any verb runs, for every
// argument and flag value: paths and a background task's command too,
// which are recorded as well.
func checkUTF8(app *cli.App, args []string) error {
	for i, a := range args {
		if i == 0 || utf8.ValidString(a) {
			continue
		}
		if name, value, ok := strings.Cut(a, "="); ok && isFlag(name) && utf8.ValidString(name) {
			return usagef("%s: %q is not valid UTF-8 (convert it first, e.g. with iconv)", name, value)
		}
		if prev := args[i-1]; i > 1 && takesValueAnywhere(app, prev) {
			return usagef("%s: %q is not valid UTF-8 (convert it first, e.g. with iconv)", prev, a)
		}
		return usagef("argument %q is not valid UTF-8 (convert it first, e.g. with iconv)", a)
	}
	return nil
}

// takesValueAnywhere reports whether the flag token a takes a value in
// some command of app: the word after it is then that flag's value.
func takesValueAnywhere(app *cli.App, a string) bool {
	found := takesValue(app.Flags, a)
	walkCommands(app.Commands, func(c *cli.Command) { found = found || takesValue(c.Flags, a) })
	return found
}

// errorText is the message of err as hermes says it: a full disk is said
// first, in plain words.
func errorText(err error) string {
	if fsstore.IsDiskFull(err) {
		return "disk full: " + err.Error()
	}
	return err.Error()
}

// silentExit carries an exit code without a message: the command has
// already said what there was to say (fsck's findings, a task's own exit
// code).
type silentExit struct{ code int }

func (e silentExit) Error() string { return fmt.Sprintf("exit status %d", e.code) }
func (e silentExit) ExitCode() int { return e.code }

// NewApp builds the application.
func NewApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:                 "hermes",
		Usage:                "durable sessions, tasks and boards for AI agents, kept as plain files",
		Version:              readBuildInfo().String(),
		Reader:               stdin,
		Writer:               stdout,
		ErrWriter:            stderr,
		EnableBashCompletion: true,
		Suggest:              true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "home", Usage: "root directory (default $HERMES_HOME, else ~/.hermes)"},
			&cli.StringFlag{Name: "profile", Aliases: []string{"p"}, Usage: "profile (default $HERMES_PROFILE, else <home>/active_profile, else default)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON: one object for a record, one object a line for a listing"},
			&cli.StringFlag{Name: "lock-timeout", Value: "10s", Usage: "how long to wait for a lock before exit 5"},
			&cli.StringFlag{Name: "fs-timeout", Value: "30s", Usage: "how long the profile's filesystem may not answer before exit 1 (0: wait for it)"},
		},
		Commands: []*cli.Command{
			chatCommand(),
			sessionsCommand(),
			tasksCommand(),
			cronCommand(),
			kanbanCommand(),
			gatewayCommand(),
			mcpCommand(),
			memoryCommand(),
			skillsCommand(),
			profileCommand(),
			fsckCommand(),
			checkpointsCommand(),
			usageCommand(),
			hooksCommand(),
			completionCommand(),
			completeCommand(),
			manCommand(),
			versionCommand(),
		},
		// Errors are mapped to exit codes by Run (exitCode), after app.Run
		// returns; this handler only stops urfave/cli from exiting on its
		// own, which it would do for a cli.ExitCoder with a type assertion
		// that misses wrapped errors.
		ExitErrHandler: func(*cli.Context, error) {},
	}
	app.Action = groupAction
	walkCommands(app.Commands, func(c *cli.Command) {
		c.OnUsageError = onUsageError
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = groupAction
		}
	})
	app.OnUsageError = onUsageError
	for _, noun := range app.Commands {
		if verbs := noun.VisibleCommands(); len(verbs) > 0 {
			noun.Usage += " (" + strings.Join(commandNames(verbs), ", ") + ")"
		}
	}
	return app
}

func walkCommands(cmds []*cli.Command, fn func(*cli.Command)) {
	for _, c := range cmds {
		fn(c)
		walkCommands(c.Subcommands, fn)
	}
}

func onUsageError(c *cli.Context, err error, _ bool) error {
	return usageMessage(c, err)
}

// groupAction runs for a noun given without a known verb: help when given
// nothing, a usage error for an unknown verb.
func groupAction(c *cli.Context) error {
	if c.Args().Present() {
		help := "hermes --help"
		if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
			help = "hermes " + c.Command.FullName() + " --help"
		}
		var verbs []*cli.Command
		if c.Command != nil && c.Command.Name != "" {
			verbs = c.Command.Subcommands
		} else {
			verbs = c.App.Commands
		}
		typed := c.Args().First()
		return usagef("unknown command %q%s (see '%s')", typed, didYouMean(typed, commandNames(verbs)), help)
	}
	if c.Command == nil || c.Command.Name == "" || c.Command.Name == c.App.Name {
		return cli.ShowAppHelp(c) // plain hermes: the page hermes --help prints
	}
	return cli.ShowSubcommandHelp(c)
}

// A switch is off unless given: its help line does not say "(default:
// false)", which beside a usage saying what the default is reads as a
// contradiction. The help command speaks as the others do.
func init() {
	probe := &cli.App{Writer: io.Discard}
	probe.Setup() // adds urfave/cli's one help command, shared by every command
	probe.Command("help").Usage = "show the commands, or one command's help"

	base := cli.FlagStringer
	cli.FlagStringer = func(f cli.Flag) string {
		s := withPlaceholder(f, base(f))
		if _, ok := f.(*cli.BoolFlag); ok {
			s = strings.TrimSuffix(s, " (default: false)")
		}
		return s
	}
}

// env is what every action needs: the resolved profile, its config, and
// the global flags.
type env struct {
	c           *cli.Context
	profile     profiles.Profile
	lockTimeout time.Duration
	fsTimeout   time.Duration
	json        bool
	stdin       io.Reader
	stdout      io.Writer
	stderr      io.Writer
}

// newEnv resolves the global flags. Nothing is written.
func newEnv(c *cli.Context) (*env, error) {
	root, err := profiles.Root(c.String("home"))
	if err != nil {
		return nil, err
	}
	p, err := profiles.Resolve(root, c.String("profile"))
	if err != nil {
		return nil, err
	}
	// A lock wait of zero is a try: fail at once (exit 5) if it is held.
	lt, err := durationFlag(c, "lock-timeout", profiles.ParseDuration)
	if err != nil {
		return nil, err
	}
	ft, err := durationFlag(c, "fs-timeout", profiles.ParseDuration)
	if err != nil {
		return nil, err
	}
	return &env{
		c:           c,
		profile:     p,
		lockTimeout: lt,
		fsTimeout:   ft,
		json:        c.Bool("json"),
		stdin:       c.App.Reader,
		stdout:      c.App.Writer,
		stderr:      c.App.ErrWriter,
	}, nil
}

// durationFlag reads flag name's value with parse: profiles.ParseDuration
// for a cutoff or a wait, where zero means now; profiles.ParsePeriod for
// a timeout, an interval or a TTL, which must be longer. A refusal names
// the flag and the text.
func durationFlag(c *cli.Context, name string, parse func(string) (time.Duration, error)) (time.Duration, error) {
	d, err := parse(c.String(name))
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", name, err)
	}
	return d, nil
}

// durationSetting is the duration a setting of config.yaml names, read
// with parse as durationFlag does, def when it is not set. A refusal
// names the setting and the text.
func durationSetting(name, value string, def time.Duration, parse func(string) (time.Duration, error)) (time.Duration, error) {
	if value == "" {
		return def, nil
	}
	d, err := parse(value)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// warn prints a report of recovered damage to stderr.
func (e *env) warn(msg string) {
	fmt.Fprintf(e.stderr, "hermes: warning: %s\n", msg)
}

// netFSOnce is fsstore.NetFSOnce; tests replace it.
var netFSOnce = fsstore.NetFSOnce

// warnNetFS says, once per profile and filesystem type (fsstore.NetFSOnce),
// that the profile directory is on a network filesystem, and what hermes
// needs of it there.
func (e *env) warnNetFS() {
	fs, ok := netFSOnce(e.profile.Dir())
	if !ok {
		return
	}
	msg := fmt.Sprintf("profile directory %s is on a network filesystem (%s): hermes needs client caches that show every host's writes at once and flock locks kept by the servers", e.profile.Dir(), fs.Type)
	if fs.Options != "" {
		msg += " (" + fs.Options + ")"
	}
	e.warn(msg + `; see README, "Running on several machines"`)
}

// config loads the profile's config.yaml. It is where every command that
// reads configuration reads it, so every one of them refuses a profile
// that another account could write (profiles.Load: exit 2, naming the
// path and the chmod that fixes it); commands that read no configuration
// (listings, show, fsck) work, so that the user can look around.
func (e *env) config() (profiles.Config, error) {
	return profiles.Load(e.profile)
}

// sessions opens the profile's session store.
func (e *env) sessions() *sessions.Store {
	return sessions.NewStore(e.profile.Dir(), e.profile.Name, e.lockTimeout, e.warn)
}

// stdinIsTerminal reports whether stdin is an interactive terminal.
func (e *env) stdinIsTerminal() bool {
	f, ok := e.stdin.(*os.File)
	return ok && isTerminal(f)
}

// confirm asks a yes/no question on the terminal. Without a terminal it
// never prompts: it refuses unless --yes was given.
func (e *env) confirm(yes bool, question string) error {
	if yes {
		return nil
	}
	if !e.stdinIsTerminal() {
		return usagef("%s: refusing without --yes (stdin is not a terminal)", question)
	}
	fmt.Fprintf(e.stderr, "%s [y/N] ", question)
	var answer string
	fmt.Fscanln(e.stdin, &answer)
	if a := strings.ToLower(strings.TrimSpace(answer)); a == "y" || a == "yes" {
		return nil
	}
	return fmt.Errorf("not confirmed; nothing removed")
}

// oneArg returns the single positional argument named name.
func oneArg(c *cli.Context, name string) (string, error) {
	switch c.NArg() {
	case 1:
		return c.Args().First(), nil
	case 0:
		return "", usagef("missing %s", name)
	}
	return "", usagef("expected one %s, got %d arguments", name, c.NArg())
}
