package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// refuseLoneSurrogate refuses a JSON body holding a lone surrogate escape
// (fsstore.LoneSurrogate), naming where it is: the decoder would read it
// as U+FFFD, but the values the gateway keeps raw (content, tool calls)
// would store it as sent, where no strict JSON reader could read it again.
// body must be valid JSON.
func refuseLoneSurrogate(body []byte) error {
	at := fsstore.LoneSurrogate(body)
	if at < 0 {
		return nil
	}
	param := jsonPathAt(body, at)
	where := ""
	if param != "" {
		where = " in " + param
	}
	return badRequest(param, "%s at byte %d%s is a lone surrogate escape (half of a UTF-16 pair), which is not Unicode",
		body[at:at+6], at, where)
}

// jsonPathAt returns the path, such as messages[1].content[0].text, of
// the scalar or key of the JSON text b that holds byte off, or "" when b
// does not decode that far. It decodes b again token by token, which is
// slow, so it only names where an error is.
func jsonPathAt(b []byte, off int) string {
	type level struct {
		array   bool
		index   int
		key     string
		wantKey bool
	}
	var stack []level
	path := func() string {
		var sb strings.Builder
		for _, l := range stack {
			switch {
			case l.array:
				fmt.Fprintf(&sb, "[%d]", l.index)
			case sb.Len() == 0:
				sb.WriteString(l.key)
			default:
				sb.WriteString("." + l.key)
			}
		}
		return sb.String()
	}
	// done moves the level holding a value past it.
	done := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].wantKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		// Where a key is wanted, the token is one, or the object's end.
		key, isKey := tok.(string)
		isKey = isKey && len(stack) > 0 && !stack[len(stack)-1].array && stack[len(stack)-1].wantKey
		if isKey {
			stack[len(stack)-1].key, stack[len(stack)-1].wantKey = key, false
		}
		if dec.InputOffset() > int64(off) {
			return path()
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, level{wantKey: true})
		case json.Delim('['):
			stack = append(stack, level{array: true})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			if !isKey {
				done()
			}
		}
	}
}
