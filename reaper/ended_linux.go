package reaper

// Why a removed session ended: a record kept a while after its sandbox
// is gone, so that its owner's next command says why, not "no such
// session", whichever process removed it (a server's timer, another
// command, the reaper).

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// EndedKeep is how long the record of a session's end is kept;
// endedMax caps how many are kept (the oldest go first), counted at
// most every pruneEvery (the mark file's age says when last).
const (
	EndedKeep  = time.Hour
	endedMax   = 4096
	prunedMark = ".pruned"
)

var pruneEvery = time.Minute

// endedRecord is what is kept of a session's end.
type endedRecord struct {
	Caller string    `json:"caller"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// endedDir is where namespace's ended sessions are recorded.
func endedDir(state, namespace string) string {
	return filepath.Join(state, "ended", namespace)
}

// RecordEnded keeps why session id of caller, in namespace, ended; an
// end its caller asked for (EndRemoved) needs no record. Errors are
// dropped: the record only improves a later message.
func RecordEnded(state, namespace, id, caller, reason string) {
	if state == "" || reason == "" || reason == EndRemoved || !validName(namespace) || !validName(id) || id == prunedMark {
		return
	}
	dir := endedDir(state, namespace)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	pruneEnded(dir)
	data, err := json.Marshal(endedRecord{Caller: caller, Reason: reason, At: time.Now()})
	if err == nil {
		_ = WriteFileAtomic(filepath.Join(dir, id), data, 0o600)
	}
}

// Ended says why session id of caller ("" for any), in namespace,
// ended, if it ended within EndedKeep for a reason other than its
// removal.
func Ended(state, namespace, id, caller string) (string, bool) {
	if state == "" || !validName(namespace) || !validName(id) || id == prunedMark {
		return "", false
	}
	f, err := os.Open(filepath.Join(endedDir(state, namespace), id))
	if err != nil {
		return "", false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	var rec endedRecord
	if err != nil || json.Unmarshal(data, &rec) != nil {
		return "", false
	}
	if caller != "" && rec.Caller != caller || time.Since(rec.At) > EndedKeep || rec.Reason == "" {
		return "", false
	}
	return rec.Reason, true
}

// pruneEnded removes the records older than EndedKeep, and the oldest
// past endedMax.
func pruneEnded(dir string) {
	mark := filepath.Join(dir, prunedMark)
	if info, err := os.Stat(mark); err == nil && time.Since(info.ModTime()) < pruneEvery {
		return
	}
	_ = WriteFileAtomic(mark, nil, 0o600)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type rec struct {
		name string
		mod  time.Time
	}
	var kept []rec
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || e.Name() == prunedMark {
			continue
		}
		if time.Since(info.ModTime()) > EndedKeep {
			_ = os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		kept = append(kept, rec{e.Name(), info.ModTime()})
	}
	if len(kept) < endedMax {
		return
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].mod.Before(kept[j].mod) })
	for _, r := range kept[:len(kept)-endedMax+1] {
		_ = os.Remove(filepath.Join(dir, r.name))
	}
}

// validName says whether s can name a file in a directory of records:
// not empty, no separator, not a dot name.
func validName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 255 {
		return false
	}
	for _, r := range s {
		if r == '/' || r == 0 {
			return false
		}
	}
	return true
}
