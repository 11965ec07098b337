#define _GNU_SOURCE  // secure_getenv
#include "assetpack_curl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// libcurl's functions, resolved once by load().
static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    time_t (*getdate)(const char *, const time_t *);
    curl_version_info_data *(*version_info)(CURLversion);
} curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int ready;
static char failure[1024];

#if defined(__APPLE__)
static const char *const defaultName = "libcurl.4.dylib";
#else
static const char *const defaultName = "libcurl.so.4";
#endif

static void load(void) {
    // Not from the environment of a set-user-ID or set-group-ID program: it would choose code
    // to run with privileges its user lacks.
#if defined(__GLIBC__)
    const char *chosen = secure_getenv("ASSETPACK_LIBCURL");
#else
    const char *chosen = issetugid() ? NULL : getenv("ASSETPACK_LIBCURL");
#endif
    const char *name = chosen != NULL && chosen[0] != '\0' ? chosen : defaultName;
    void *library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure, "cannot load libcurl (%s): %s", name, why != NULL ? why : "unknown error");
        return;
    }
    struct {
        void *slot;
        const char *symbol;
    } symbols[] = {
        {&curl.global_init, "curl_global_init"},
        {&curl.easy_init, "curl_easy_init"},
        {&curl.easy_cleanup, "curl_easy_cleanup"},
        {&curl.easy_reset, "curl_easy_reset"},
        {&curl.easy_perform, "curl_easy_perform"},
        {&curl.easy_setopt, "curl_easy_setopt"},
        {&curl.easy_strerror, "curl_easy_strerror"},
        {&curl.slist_append, "curl_slist_append"},
        {&curl.slist_free_all, "curl_slist_free_all"},
        {&curl.getdate, "curl_getdate"},
        {&curl.version_info, "curl_version_info"},
    };
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        // dlsym answers an object pointer; POSIX guarantees it converts to the function's. Copied
        // as bytes, not stored through a `void **` that aliases a function pointer.
        void *found = dlsym(library, symbols[i].symbol);
        memcpy(symbols[i].slot, &found, sizeof found);
        if (found == NULL) {
            snprintf(failure, sizeof failure, "%s is not libcurl: it lacks %s", name, symbols[i].symbol);
            return;
        }
    }
    // CURLOPT_PROTOCOLS_STR (what keeps a transfer to http and https) came in 7.85.0; an older
    // libcurl would ignore it, and every other option the client sets is older.
    const curl_version_info_data *version = curl.version_info(CURLVERSION_NOW);
    if (version == NULL || version->version_num < 0x075500) {
        snprintf(failure, sizeof failure, "%s is libcurl %s, older than 7.85.0", name,
                 version != NULL && version->version != NULL ? version->version : "of an unknown version");
        return;
    }
    if (curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(failure, sizeof failure, "libcurl (%s) failed to initialise (curl_global_init)", name);
        return;
    }
    ready = 1;
}

int assetpack_curl_load(char *error, size_t capacity) {
    pthread_once(&once, load);
    if (!ready && error != NULL && capacity > 0) snprintf(error, capacity, "%s", failure);
    return ready;
}

// Loads libcurl if no call did yet. Callers checked that it loads (HTTPRangeClient's initialiser
// calls assetpack_curl_load and throws without it), so failing here is a bug in the caller.
static void loaded(void) {
    pthread_once(&once, load);
    if (!ready) {
        fprintf(stderr, "assetpack: a libcurl function was called though libcurl did not load: %s\n", failure);
        abort();
    }
}

CURL *assetpack_curl_easy_init(void) { loaded(); return curl.easy_init(); }
void assetpack_curl_easy_cleanup(CURL *handle) { loaded(); curl.easy_cleanup(handle); }
void assetpack_curl_easy_reset(CURL *handle) { loaded(); curl.easy_reset(handle); }
CURLcode assetpack_curl_easy_perform(CURL *handle) { loaded(); return curl.easy_perform(handle); }
const char *assetpack_curl_easy_strerror(CURLcode code) { loaded(); return curl.easy_strerror(code); }
struct curl_slist *assetpack_curl_slist_append(struct curl_slist *list, const char *string) {
    loaded();
    return curl.slist_append(list, string);
}
void assetpack_curl_slist_free_all(struct curl_slist *list) { loaded(); curl.slist_free_all(list); }
time_t assetpack_curl_getdate(const char *date, const time_t *unused) { loaded(); return curl.getdate(date, unused); }

CURLcode assetpack_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    loaded();
    return curl.easy_setopt(handle, option, value);
}
CURLcode assetpack_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    loaded();
    return curl.easy_setopt(handle, option, value);
}
CURLcode assetpack_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    loaded();
    return curl.easy_setopt(handle, option, value);
}
CURLcode assetpack_curl_setopt_callback(CURL *handle, CURLoption option, assetpack_curl_data_callback value) {
    loaded();
    return curl.easy_setopt(handle, option, value);
}
CURLcode assetpack_curl_setopt_xferinfo(CURL *handle, assetpack_curl_xferinfo_callback value) {
    loaded();
    return curl.easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}
