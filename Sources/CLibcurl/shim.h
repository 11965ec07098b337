#pragma once
#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed
// wrapper per argument type AssetPackRemote passes.
typedef size_t (*assetpack_curl_data_callback)(char *, size_t, size_t, void *);
// CURLOPT_XFERINFOFUNCTION: bytes to download and downloaded, to upload and uploaded; non-zero aborts.
typedef int (*assetpack_curl_xferinfo_callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

static inline CURLcode assetpack_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode assetpack_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode assetpack_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode assetpack_curl_setopt_callback(
    CURL *handle, CURLoption option, assetpack_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode assetpack_curl_setopt_xferinfo(CURL *handle, assetpack_curl_xferinfo_callback value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}
static inline CURLcode assetpack_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
