package storage

import "context"

// ChangeFeed lets processes that share a store tell each other that an organization's data
// changed, so that each can drop what it cached of that organization. A process that changes
// data calls Touch after the change; every process runs WatchChanges.
//
// A store that one process at a time can open (the embedded store) has no one to tell: its
// Touch does nothing and its WatchChanges only waits for ctx to end.
type ChangeFeed interface {
	// Touch records that data of organization orgID changed. It is called after the change
	// succeeded and before the change is acknowledged.
	Touch(ctx context.Context, orgID string) error
	// WatchChanges calls changed with the id of every organization touched since it started,
	// by this process or another, within about a second of the Touch, until ctx ends; then it
	// returns ctx's error. It may also call changed for an organization that was not touched
	// (after an outage of the store, say), never less often than once per Touch it saw. It
	// calls synced(true) whenever it knows it has reported every Touch made until then, which
	// is several times a second while the store answers, and synced(false) as soon as it finds
	// it cannot know (a read failed or took too long): a cache of the store is as fresh as the
	// last synced(true). Both are called from one goroutine at a time.
	WatchChanges(ctx context.Context, changed func(orgID string), synced func(fresh bool)) error
}
