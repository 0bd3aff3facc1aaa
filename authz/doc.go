// Package authz is Grantry's decision engine: it answers "may this user use these resources?"
// for every organization, with whatever Rego policy runs, on any store, and keeps the answer
// the one a full evaluation of the policy over the store's facts gives.
//
// A question is answered in one order:
//
//  1. The policy running now is pinned (policy.Live), with what its allow and allow_all rules
//     read of their input (policy.Reads, found by analysing the compiled policy) and a memo of
//     each rule's answers. A question is answered wholly by the policy pinned.
//  2. The facts the policy reads — the organization's resources and integrations, the user, the
//     user's groups — are taken from memory (cache.go), or read from the store and kept. Every
//     write made through this process drops what it changes before it is acknowledged
//     (store.go); other processes' writes, on a shared store, arrive through the store's change
//     feed, and held facts are used only while the feed confirms it has seen every change
//     (sync.go). So held facts are the store's facts.
//  3. When the rule's reads are bounded, its key is written from the facts: exactly what the
//     rule reads of this question's input, and nothing else (key.go). The memo answers a key it
//     holds (memo.go). That is sound because the rule is a function of what it reads: two
//     inputs alike in all of it get the same answer, whoever and whenever they are about, so a
//     remembered answer never goes stale; a changed fact makes another key. The time of the
//     request is in the key only as the outcomes of the comparisons the rule makes with it.
//  4. Otherwise the policy is evaluated (rule.go): over the input pruned to what the rule reads
//     when its reads are bounded, over the whole input when they are not (the policy reads the
//     whole input, the time other than in comparisons, or a built-in whose answer is not a
//     function of its arguments), and the answer is remembered under the key when there is one.
//     An evaluation that fails denies and is remembered nowhere.
//
// At start the engine reads every user and group into memory (readin.go), so that the first
// question about each reads nothing from the store.
package authz
