// Package contract owns what a caller says to boxer and what boxer
// answers, as plain data: the request and its normalization, the result
// and how an exit is classified, the presets, the field and limit errors,
// the sessions', processes' and files' types, the per-caller ceilings'
// counting and the capped output buffers. It holds no sandbox: it builds
// on every OS and must never import containerd, runtime code (cgroups,
// userns, reaper, daemon, snapshots) or any other package of runner.
package contract
