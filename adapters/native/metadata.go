package native

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// encodeMeta packs a job's metadata into the string its record holds: each
// pair as <n>:<key><n>:<value>, n being the byte length, in key order (so
// that unchanged metadata packs to the same string). Every byte of keys and
// values is kept as it is: metadata need not be UTF-8. An empty map packs
// to "".
func encodeMeta(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	size := 0
	keys := make([]string, 0, len(m))
	for k, v := range m {
		keys = append(keys, k)
		size += len(k) + len(v) + 8
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	for _, k := range keys {
		v := m[k]
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, ':')
		b = append(b, k...)
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(b, ':')
		b = append(b, v...)
	}
	return string(b)
}

// decodeMeta unpacks metadata packed by encodeMeta (or, from records
// written before it, a JSON object) into a new map, empty but never nil, so
// that a handler or observer can set keys on it. Whatever follows a
// malformed pair is dropped.
func decodeMeta(s string) map[string]string {
	m := map[string]string{}
	if strings.HasPrefix(s, "{") {
		_ = json.Unmarshal([]byte(s), &m)
		return m
	}
	for s != "" {
		k, rest, ok := cutCounted(s)
		if !ok {
			break
		}
		v, rest, ok := cutCounted(rest)
		if !ok {
			break
		}
		m[k] = v
		s = rest
	}
	return m
}

// cutCounted splits a length-prefixed string, <n>:<n bytes>, off the front
// of s.
func cutCounted(s string) (field, rest string, ok bool) {
	ns, tail, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", false
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 0 || n > len(tail) {
		return "", "", false
	}
	return tail[:n], tail[n:], true
}
