// The module's functions are static inline in its header; this file gives SwiftPM a source to build.
#include "assetpack_hints.h"
