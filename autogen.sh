#!/bin/sh
# Regenerate the build system (configure, Makefile.in) from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf -fi
