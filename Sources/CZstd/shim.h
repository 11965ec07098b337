#pragma once
// The stable API only (no ZSTD_STATIC_LINKING_ONLY): Debian ships libzstd as a shared library,
// and the experimental declarations may change between its versions.
#include <zstd.h>
#include <zstd_errors.h>
// Dictionary training (ZDICT_trainFromBuffer, stable API) for the container's per-pack dictionary.
#include <zdict.h>
