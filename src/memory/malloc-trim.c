/*
 * iogate's only native code: gives the C library's freed heap memory back to
 * the system.
 *
 * glibc returns freed memory to the kernel only from the top of its heap.
 * After a burst of writes, Node's per-request C allocations (request body
 * copies, parser and connection records) are freed again, but the pages they
 * used sit below blocks that stay alive, so the daemon's private memory stays
 * a few MB above where it was. malloc_trim() walks the free lists and hands
 * every whole free page back (madvise), which nothing in JavaScript can do.
 * src/memory/malloc-trim.ts loads this file if it was built; without it iogate
 * runs the same, only keeping that memory.
 *
 * A Node-API addon, version 1 of the ABI, so one build runs on every Node from
 * 18 on. Its few functions are declared here rather than taken from Node's
 * headers, so it builds with nothing but a C compiler (and a cross compiler
 * for the PLCs' architectures): node resolves them when it loads the file.
 */
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status; /* an enum in C: int-sized; 0 is napi_ok */
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);

extern napi_status napi_create_function(napi_env env, const char *name, size_t length, napi_callback cb, void *data,
                                        napi_value *result);
extern napi_status napi_set_named_property(napi_env env, napi_value object, const char *name, napi_value value);
extern napi_status napi_get_boolean(napi_env env, _Bool value, napi_value *result);

#define NAPI_AUTO_LENGTH SIZE_MAX
#define EXPORTED __attribute__((visibility("default")))

/* mallocTrim(): true when some memory went back to the system. */
static napi_value malloc_trim_js(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result = NULL;
  napi_get_boolean(env, malloc_trim(0) != 0, &result);
  return result;
}

/*
 * setTrimThreshold(): glibc's trim threshold fixed at 64 KB, as the service
 * unit's MALLOC_TRIM_THRESHOLD_=65536 does. A daemon copied and started as
 * `node iogate.js` has no such variable; without it the threshold starts at
 * 128 KB and rises with every large free, and glibc then keeps several MB of
 * freed heap (bench: RssAnon idle 22 -> 15 MB with it). mallopt() sets the
 * same parameter the variable sets, and also stops its rising.
 */
static napi_value set_trim_threshold_js(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result = NULL;
  napi_get_boolean(env, mallopt(M_TRIM_THRESHOLD, 65536) == 1, &result);
  return result;
}

/* Node-API's entry point: node calls it once when the file is loaded. */
EXPORTED napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  napi_value function;
  if (napi_create_function(env, "mallocTrim", NAPI_AUTO_LENGTH, malloc_trim_js, NULL, &function) != 0) return NULL;
  if (napi_set_named_property(env, exports, "mallocTrim", function) != 0) return NULL;
  if (napi_create_function(env, "setTrimThreshold", NAPI_AUTO_LENGTH, set_trim_threshold_js, NULL, &function) != 0) return NULL;
  if (napi_set_named_property(env, exports, "setTrimThreshold", function) != 0) return NULL;
  return exports;
}
