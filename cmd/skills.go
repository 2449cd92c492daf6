package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/skills"
)

func skillsCommand() *cli.Command {
	cwd := &cli.StringFlag{Name: "cwd", Usage: "the working directory whose project skills (.hermes/skills, .claude/skills) are listed (default: this one)"}
	return &cli.Command{
		Name:  "skills",
		Usage: "skills (SKILL.md directories) the agent loads when a task calls for them: the profile's and the project's",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "every skill a session here gets: name, source, who made it, description", ArgsUsage: " ", Flags: []cli.Flag{cwd}, Action: withEnv(skillsList)},
			{Name: "show", Usage: "print a skill's SKILL.md; where it is, who made it and its files on stderr", ArgsUsage: "NAME", Flags: []cli.Flag{cwd}, Action: withEnv(skillsShow)},
			{Name: "add", Usage: "copy a skill (a directory holding a SKILL.md, or a SKILL.md) into the profile; a name taken is refused", ArgsUsage: "DIR|FILE", Action: withEnv(skillsAdd)},
			{Name: "remove", Usage: "move a skill of the profile aside (skills revert brings it back)", ArgsUsage: "NAME", Flags: []cli.Flag{
				&cli.BoolFlag{Name: "dry-run", Usage: "say what would be moved, and move nothing"},
			}, Action: withEnv(skillsRemove)},
			{Name: "import", Usage: "add every skill of DIR (default ~/.claude/skills; a Python hermes's ~/.hermes/skills too), leaving those whose name the profile has", ArgsUsage: "[DIR]", Action: withEnv(skillsImport)},
			{Name: "log", Usage: "every change of the profile's skills, oldest first, numbered", ArgsUsage: " ", Action: withEnv(skillsLog)},
			{Name: "revert", Usage: "undo change N with a new change (a create or add moved aside, a removal brought back, a patch taken back)", ArgsUsage: "N", Action: withEnv(skillsRevert)},
		},
	}
}

func (e *env) skills() *skills.Store {
	return skills.NewStore(e.profile.Dir(), e.lockTimeout, e.warn)
}

// skillsFinder is what a session working in cwd finds: the profile's
// skills and the project's.
func skillsFinder(e *env) *agent.Skills {
	return &agent.Skills{Store: e.skills(), Warn: e.warn}
}

func skillsCwd(e *env) (string, error) {
	if d := e.c.String("cwd"); d != "" {
		return absDir(d)
	}
	return os.Getwd()
}

func skillsList(e *env) error {
	if _, err := verbArgs(e); err != nil {
		return err
	}
	cwd, err := skillsCwd(e)
	if err != nil {
		return err
	}
	st := e.skills()
	out := bufferedOut(e.stdout)
	defer out.Flush()
	var tb *table
	if !e.json {
		tb = newTable(out, "NAME", "SOURCE", "MADE BY", "DESCRIPTION")
	}
	for _, r := range skillsFinder(e).Catalog(context.Background(), cwd) {
		origin := ""
		if r.Source == skills.SourceProfile {
			origin = st.Origin(r.Name)
		}
		if e.json {
			printJSON(out, skills.Skill{Meta: r.Meta, Dir: r.Dir, Source: r.Source, Origin: origin})
			continue
		}
		tb.row(r.Name, r.Source, dash(origin), entryPreview(r.Description))
	}
	if tb != nil {
		return tb.flush()
	}
	return nil
}

func skillsShow(e *env) error {
	args, err := verbArgs(e, "NAME")
	if err != nil {
		return err
	}
	cwd, err := skillsCwd(e)
	if err != nil {
		return err
	}
	ref, err := skillsFinder(e).Find(cwd, args[0])
	if errors.Is(err, fs.ErrNotExist) {
		return fsstore.NotFoundf("skill %s not found (hermes skills list)", args[0])
	}
	if err != nil {
		return err
	}
	st := skills.Store{Dir: filepath.Dir(ref.Dir)}
	sk, body, err := st.Get(ref.Name)
	if err != nil {
		return err
	}
	data, err := st.Text(ref.Name)
	if err != nil {
		return err
	}
	origin := ""
	if ref.Source == skills.SourceProfile {
		origin = sk.Origin
	}
	files := []string{}
	filepath.WalkDir(ref.Dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if path != ref.Dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if rel, _ := filepath.Rel(ref.Dir, path); d.Type().IsRegular() && rel != skills.FileName {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if e.json {
		return printJSON(e.stdout, map[string]any{"name": sk.Name, "description": sk.Description, "allowed_tools": sk.AllowedTools,
			"dir": ref.Dir, "source": ref.Source, "origin": origin, "files": files, "body": body})
	}
	io.WriteString(e.stdout, data)
	who := ref.Source
	if origin != "" {
		who += ", made by the " + origin
	}
	fmt.Fprintf(e.stderr, "hermes: skill %s (%s): %s\n", sk.Name, who, ref.Dir)
	if len(files) > 0 {
		fmt.Fprintf(e.stderr, "hermes: files beside it: %s\n", strings.Join(files, ", "))
	}
	return nil
}

func skillsAdd(e *env) error {
	args, err := verbArgs(e, "DIR|FILE")
	if err != nil {
		return err
	}
	c, err := e.skills().Add(args[0], skills.Who{By: skills.ByUser})
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, c)
	}
	fmt.Fprintf(e.stderr, "hermes: skill %s added (change %d)\n", c.Name, c.Seq)
	return nil
}

func skillsRemove(e *env) error {
	args, err := verbArgs(e, "NAME")
	if err != nil {
		return err
	}
	st := e.skills()
	if e.c.Bool("dry-run") {
		if _, _, err := st.Get(args[0]); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "hermes: would move skill %s (%s) to %s\n", args[0], st.Path(args[0]), filepath.Join(st.Dir, ".removed"))
		return nil
	}
	c, err := st.Delete(args[0], skills.Who{By: skills.ByUser})
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, c)
	}
	fmt.Fprintf(e.stderr, "hermes: skill %s removed: kept in %s (hermes skills revert %d brings it back)\n", c.Name, filepath.Join(st.Dir, c.Aside), c.Seq)
	return nil
}

func skillsImport(e *env) error {
	if e.c.NArg() > 1 {
		return usagef("skills import takes at most one DIR, got %d arguments", e.c.NArg())
	}
	src := e.c.Args().First()
	if src == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return err
		}
		src = filepath.Join(home, ".claude", "skills")
	}
	got, err := e.skills().Import(src, skills.Who{By: skills.ByUser})
	for _, im := range got {
		if e.json {
			printJSON(e.stdout, im)
			continue
		}
		switch im.Status {
		case "added":
			fmt.Fprintf(e.stderr, "hermes: skill %s added from %s (change %d)\n", im.Name, im.From, im.Seq)
		case "exists":
			e.warn(fmt.Sprintf("skill %s not imported from %s: the profile has a skill of that name, left as it is", im.Name, im.From))
		default:
			e.warn(fmt.Sprintf("skill %s not imported: %s", im.Name, im.Reason))
		}
	}
	if err == nil && len(got) == 0 {
		fmt.Fprintf(e.stderr, "hermes: no skill found in %s\n", src)
	}
	return err
}

func skillsLog(e *env) error {
	if _, err := verbArgs(e); err != nil {
		return err
	}
	out := bufferedOut(e.stdout)
	defer out.Flush()
	var tb *table
	if !e.json {
		tb = newTable(out, "N", "TIME", "BY", "CHANGE", "SKILL", "DETAIL")
	}
	err := e.skills().Log(func(c skills.Change) {
		if e.json {
			printJSON(out, c)
			return
		}
		by := c.By
		if c.SessionID != "" {
			by += " " + c.SessionID
		}
		detail := c.File
		switch {
		case c.Aside != "":
			detail = c.Aside
		case c.From != "":
			detail = "from " + c.From
		}
		if c.Reverts > 0 {
			detail = strings.TrimSpace(detail + fmt.Sprintf(" (reverts %d)", c.Reverts))
		}
		tb.row(c.Seq, shortTime(c.TS), by, c.Op, c.Name, dash(detail))
	})
	if err != nil {
		return err
	}
	if tb != nil {
		return tb.flush()
	}
	return nil
}

func skillsRevert(e *env) error {
	args, err := verbArgs(e, "N")
	if err != nil {
		return err
	}
	seq, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || seq <= 0 {
		return usagef("skills revert: %q is not a change number (hermes skills log lists them)", args[0])
	}
	c, err := e.skills().Revert(seq, skills.Who{By: skills.ByUser})
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, c)
	}
	fmt.Fprintf(e.stderr, "hermes: change %d reverted: skill %s %s (change %d)\n", seq, c.Name, c.Op, c.Seq)
	return nil
}
