package kanban

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// commentKey is the record of a comment's idempotency key, in
// keys/<hash>.comment.json: the task, the digest of the author and text
// the key first came with, and the id and time the comment has.
type commentKey struct {
	TaskID    string       `json:"task_id"`
	Digest    string       `json:"digest"`
	CommentID string       `json:"comment_id"`
	TS        fsstore.Time `json:"ts"`
}

// AddCommentOnce is AddComment with an idempotency key: the comment is
// stored at most once for key, whatever the number of calls, so that a
// caller may retry a comment whose outcome it does not know. Under the
// key's lock, a key seen before on another task or with another author or
// text is ErrInvalid, writing nothing; a key whose comment is in the
// task's comments returns that comment and again=true, writing nothing.
// Otherwise the key's record, the comment's id and time, is written
// (synced: the key's commit point) before the comment is appended; a
// comment whose append failed after it (its outcome unknown to the
// caller) is appended by the next call with the key, with the recorded id
// and time, once the comments are found without it.
func (b *Board) AddCommentOnce(key, id, author, text string) (c Comment, again bool, err error) {
	if err := fsstore.CheckKey(key); err != nil {
		return Comment{}, false, err
	}
	if _, err := b.Get(id); err != nil {
		return Comment{}, false, err
	}
	if strings.TrimSpace(text) == "" {
		return Comment{}, false, fsstore.Invalidf("empty comment")
	}
	if err := fsstore.EnsureDir(b.keysDir()); err != nil {
		return Comment{}, false, err
	}
	path := filepath.Join(b.keysDir(), fsstore.KeyName("comment\x00"+key)+".comment.json")
	unlock, err := fsstore.LockUntil(path+".lock", b.LockTimeout, b.Cancel)
	if err != nil {
		return Comment{}, false, err
	}
	defer unlock()
	digest := sha256.Sum256([]byte(author + "\x00" + text))
	want := hex.EncodeToString(digest[:])
	var rec commentKey
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &rec); err != nil || fsstore.CheckID("comment id", rec.CommentID) != nil {
			return Comment{}, false, &fsstore.CorruptError{Path: path, Err: errors.New("not a comment's key record")}
		}
		if rec.TaskID != id || rec.Digest != want {
			return Comment{}, false, fsstore.Invalidf("key %q was used before for another comment (on task %s)", key, rec.TaskID)
		}
		c = Comment{ID: rec.CommentID, TS: rec.TS, Author: author, Text: text}
		comments, err := b.Comments(id)
		if err != nil {
			return Comment{}, false, err
		}
		if i := slices.IndexFunc(comments, func(s Comment) bool { return s.ID == c.ID }); i >= 0 {
			return comments[i], true, nil
		}
	case errors.Is(err, os.ErrNotExist):
		now := b.Now()
		c = Comment{ID: fsstore.NewID(now), TS: fsstore.TimeOf(now), Author: author, Text: text}
		rec = commentKey{TaskID: id, Digest: want, CommentID: c.ID, TS: c.TS}
		data, _ := json.Marshal(rec)
		if err := fsstore.WriteFileAtomic(path, data); err != nil {
			return Comment{}, false, err
		}
		defer fsstore.SweepKeys(b.keysDir())
	default:
		return Comment{}, false, err
	}
	line, _ := json.Marshal(c)
	if err := b.appendLine(b.commentsPath(id), line); err != nil {
		return Comment{}, false, err
	}
	return c, false, nil
}
