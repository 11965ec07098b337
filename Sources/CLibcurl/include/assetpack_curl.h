#pragma once
// curl.h not found? It is in Debian's libcurl4-openssl-dev (`make deps` installs it; Homebrew: curl).
#include <curl/curl.h>
#include <stddef.h>
#include <time.h>

// libcurl, loaded when the process first needs it (dlopen), not at process start: linking it made
// every command, remote or not, load libcurl and the ~33 libraries it needs (~3.5 ms of start here;
// docs/PERFORMANCE.md, "Process start"). The types and constants come from curl.h as before; the
// calls go through these functions, which call libcurl's own.

/// Loads libcurl and runs curl_global_init, once per process (later calls return the first
/// answer). The library is `ASSETPACK_LIBCURL` when set (a path or a name), else libcurl.so.4
/// (libcurl.4.dylib on Apple platforms).
/// - Returns: 1 when libcurl is ready; 0 when not, with why in `error` (NUL-terminated).
int assetpack_curl_load(char *error, size_t capacity);

// libcurl's functions of the same names without the prefix. Each loads libcurl if nothing did
// yet; call them only once assetpack_curl_load returned 1 (one called when libcurl cannot be
// loaded aborts with a message: a bug in its caller, not a missing library).
CURL *assetpack_curl_easy_init(void);
void assetpack_curl_easy_cleanup(CURL *handle);
void assetpack_curl_easy_reset(CURL *handle);
CURLcode assetpack_curl_easy_perform(CURL *handle);
const char *assetpack_curl_easy_strerror(CURLcode code);
struct curl_slist *assetpack_curl_slist_append(struct curl_slist *list, const char *string);
void assetpack_curl_slist_free_all(struct curl_slist *list);
time_t assetpack_curl_getdate(const char *date, const time_t *unused);

// curl_easy_setopt is variadic, which Swift cannot call: one typed wrapper per argument type
// AssetPackHTTP passes.
typedef size_t (*assetpack_curl_data_callback)(char *, size_t, size_t, void *);
// CURLOPT_XFERINFOFUNCTION: bytes to download and downloaded, to upload and uploaded; non-zero aborts.
typedef int (*assetpack_curl_xferinfo_callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

CURLcode assetpack_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode assetpack_curl_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode assetpack_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode assetpack_curl_setopt_callback(CURL *handle, CURLoption option, assetpack_curl_data_callback value);
CURLcode assetpack_curl_setopt_xferinfo(CURL *handle, assetpack_curl_xferinfo_callback value);
