package snapshots

// StripPrivileges clears the setuid and setgid bits and drops the file
// capabilities of everything under root, never following a symlink: what
// an image boxer builds holds (see stripPrivileges), for layers made
// elsewhere (a Dockerfile's steps).
func StripPrivileges(root string) error { return stripPrivileges(root) }
