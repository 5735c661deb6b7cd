// Package imagebuild builds images from a Dockerfile of the instructions
// that make an agent's environment (FROM, RUN, COPY, ADD, ENV, WORKDIR,
// USER, ARG, CMD, ENTRYPOINT, LABEL), parsed by BuildKit's parser. Each
// RUN is a boxer sandbox (runner/sandbox) on a writable containerd
// snapshot of the layers so far, as root in a user namespace of its own
// with a few capabilities; each layer is committed through containerd's
// snapshot and diff services and cached as an image record by the hash
// of its parent's key and the step.
//
// It is a package of its own, not snapshots': it runs sandboxes, which
// snapshots (below runner/sandbox) must not.
package imagebuild
