package imagebuild

import (
	"errors"
	"strings"
	"testing"
)

// TestParseSupported: the subset parses into one step per instruction
// after FROM, the ARGs before FROM kept apart.
func TestParseSupported(t *testing.T) {
	df, err := Parse("Dockerfile", strings.NewReader(`ARG BASE=boxer/python
FROM ${BASE}
ARG V=1
ENV A=1 B="two words"
WORKDIR /app
COPY --chown=1000:1000 hello.txt ./
ADD data/ /data/
RUN pip install x \
    y
RUN ["/bin/true"]
USER 1000
LABEL k=v
CMD ["python3"]
ENTRYPOINT ["/bin/sh", "-c"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if df.From != "${BASE}" || df.FromLine != 2 || len(df.MetaArgs) != 1 {
		t.Errorf("FROM %q line %d, %d meta args", df.From, df.FromLine, len(df.MetaArgs))
	}
	if len(df.Steps) != 11 {
		t.Fatalf("%d steps, want 11", len(df.Steps))
	}
	if s := df.Steps[5]; s.Line != 8 || s.Text != "RUN pip install x y" {
		t.Errorf("step 6: line %d %q", s.Line, s.Text)
	}
}

// TestParseRefused: what boxer does not build is refused naming its
// line and instruction.
func TestParseRefused(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"FROM a\nEXPOSE 80\n", "Dockerfile:2: EXPOSE is not supported"},
		{"FROM a\nRUN --mount=type=cache,target=/x true\n", "Dockerfile:2: RUN is not supported (RUN --mount"},
		{"FROM a\nRUN --network=host true\n", "Dockerfile:2: RUN is not supported (RUN --network"},
		{"FROM a\nCOPY --from=b /x /y\n", "Dockerfile:2: COPY is not supported (--from"},
		{"FROM a\nCOPY --chmod=755 x /y\n", "Dockerfile:2: COPY is not supported (--chmod"},
		{"FROM a\nCOPY --chown=app x /y\n", "Dockerfile:2: COPY is not supported (--chown takes numeric"},
		{"FROM a\nADD https://example.com/x /y\n", "Dockerfile:2: ADD is not supported (ADD of a URL"},
		{"FROM a\nADD x.tar.gz /y\n", "Dockerfile:2: ADD is not supported (ADD of an archive"},
		{"FROM a\n\nRUN <<EOF\ntrue\nEOF\n", "Dockerfile:3: RUN is not supported (heredocs"},
		{"FROM a\nFROM b\n", "Dockerfile:2: FROM is not supported (one stage only"},
		{"FROM --platform=linux/arm64 a\n", "Dockerfile:1: FROM is not supported (--platform"},
		{"FROM a\nHEALTHCHECK CMD true\n", "Dockerfile:2: HEALTHCHECK is not supported"},
		{"FROM a\nSHELL [\"/bin/bash\", \"-c\"]\n", "Dockerfile:2: SHELL is not supported"},
		{"FROM a\nONBUILD RUN true\n", "Dockerfile:2: ONBUILD is not supported"},
		{"FROM a\nBOGUS x\n", "Dockerfile:2: BOGUS is not supported"},
		{"ENV A=1\nFROM a\n", "Dockerfile:1: ENV is not supported (before FROM"},
	} {
		_, err := Parse("Dockerfile", strings.NewReader(tc.file))
		var u *Unsupported
		if !errors.As(err, &u) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %s...", tc.file, err, tc.want)
		}
	}
	if _, err := Parse("Dockerfile", strings.NewReader("RUN true\n")); err == nil {
		t.Error("a file without FROM parsed")
	}
}

// TestStepKey: a key changes with the parent, the step and its extras.
func TestStepKey(t *testing.T) {
	k := stepKey("p", "RUN a", "x")
	for _, other := range []string{stepKey("q", "RUN a", "x"), stepKey("p", "RUN b", "x"), stepKey("p", "RUN a", "y"), stepKey("p", "RUN a", "x", "")} {
		if other == k {
			t.Errorf("key %s repeated", k)
		}
	}
	if stepKey("p", "RUN a", "x") != k {
		t.Error("key not stable")
	}
}
