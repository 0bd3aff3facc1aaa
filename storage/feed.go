package storage

import "context"

// Change is what a write reached, as the change feed reports it to other processes.
type Change struct {
	OrgID  string
	Users  []string // the users whose facts changed (record, grants, group memberships)
	Groups []string // the groups whose name or grants changed
	// Org says the organization as a whole changed (its resources or integrations, or more
	// users or groups than a change names): every process drops all it holds of it.
	Org bool
}

// ChangeFeed lets processes that share a store tell each other what of an organization's data
// changed, so that each can drop what it holds of that and keep the rest. A process that changes
// data calls Touch after the change; every process runs WatchChanges.
//
// The promise: every Touch is reported to every watcher, by this process or another, within
// about a second, at least as broadly as it was made. A watcher may report more than was
// touched — the whole organization (Org) in place of some of its users or groups, or a change
// more than once — but never less: not across an outage of the store (after which it reports
// Org for every organization it has seen), nor when the watcher falls behind.
//
// A store that one process at a time can open (the embedded store) has no one to tell: its
// Touch does nothing and its WatchChanges only waits for ctx to end.
type ChangeFeed interface {
	// Touch records that c changed. It is called after the change succeeded (or failed in a
	// way that may have let it happen) and before the change is acknowledged.
	Touch(ctx context.Context, c Change) error
	// WatchChanges calls changed with every Touch made after its first look at the store, by
	// this process or another, within about a second of the Touch, until ctx ends; then it
	// returns ctx's error. It reports each change at least as broadly as it was touched (see
	// ChangeFeed). It calls synced(true) whenever it knows it has reported every Touch made
	// until then, which is several times a second while the store answers, and synced(false)
	// as soon as it finds it cannot know (a read failed or took too long): a cache of the
	// store is as fresh as the last synced(true). Both are called from one goroutine at a
	// time.
	WatchChanges(ctx context.Context, changed func(Change), synced func(fresh bool)) error
}
