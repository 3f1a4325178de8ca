// DNS-SD (advertising and browsing services) through the system's Avahi daemon, for
// CBLiteDiscovery. libavahi-client.so.3 and libavahi-common.so.3 are loaded with dlopen the
// first time a service starts, so libcblite.so has no runtime dependency on Avahi: without
// the library, or without a daemon reachable over D-Bus, starting fails with a message and
// nothing else is affected. Each service has its own Avahi client on its own threaded poll
// (avahi_threaded_poll): every event is delivered on that poll's thread.
//
// Nothing here is exported from libcblite.so (compiled with -fvisibility=hidden).
#ifndef CAVAHI_SHIM_H
#define CAVAHI_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cavahi_service cavahi_service;

typedef enum {
    CAVAHI_PUBLISHED = 1,   // the advertisement is established under `name` (after any renaming)
    CAVAHI_RENAMED = 2,     // `name` was taken on the network: re-registering under the new `name`
    CAVAHI_FOUND = 3,       // a service resolved: name, type, domain, host, address, port, txt
    CAVAHI_REMOVED = 4,     // a service went away (on interface/protocol): name, type, domain
    CAVAHI_FAILED = 5,      // the service failed (daemon gone, registration refused): message
} cavahi_event_kind;

typedef struct {
    cavahi_event_kind kind;
    const char *name, *type, *domain;
    const char *host, *address;         // CAVAHI_FOUND only
    uint16_t port;                      // CAVAHI_FOUND only
    int interface, protocol;            // Avahi's interface index and protocol (0 IPv4, 1 IPv6)
    const char *const *txt;             // CAVAHI_FOUND: the TXT items, in order
    int txt_count;
    const char *message;                // CAVAHI_FAILED
} cavahi_event;

/// Called on the service's poll thread; pointers are valid during the call only. It may
/// call cavahi_stop on its own service (which then completes on another thread).
typedef void (*cavahi_event_fn)(void *context, const cavahi_event *event);

typedef enum {
    CAVAHI_OK = 0,
    CAVAHI_NO_LIBRARY = 1,   // libavahi-client.so.3 (or libavahi-common.so.3) could not be loaded
    CAVAHI_NO_DAEMON = 2,    // no Avahi daemon reachable over the system D-Bus
    CAVAHI_ERROR = 3,        // anything else Avahi refused (bad service type, name, ...)
} cavahi_status;

/// Advertises `name` of `type` (e.g. "_couchdb._tcp") on `port` with the TXT items, on every
/// interface, in the default domain. A name taken on the network is replaced by Avahi's
/// alternative name ("name #2") and registered again (CAVAHI_RENAMED, then CAVAHI_PUBLISHED).
/// On failure writes a message into errbuf.
cavahi_status cavahi_publish(const char *name, const char *type, uint16_t port, const char *const *txt, int txt_count,
                             cavahi_event_fn fn, void *context, cavahi_service **out, char *errbuf, size_t errlen);

/// Replaces the advertised TXT items (published at once when the service is registered,
/// else used when it is). Returns CAVAHI_ERROR with a message when Avahi refuses them.
cavahi_status cavahi_update_txt(cavahi_service *service, const char *const *txt, int txt_count, char *errbuf, size_t errlen);

/// Browses for services of `type` in the default domain: each one found is resolved
/// (CAVAHI_FOUND, once per interface and protocol it is seen on) and reported when it goes
/// (CAVAHI_REMOVED).
cavahi_status cavahi_browse(const char *type, cavahi_event_fn fn, void *context, cavahi_service **out,
                            char *errbuf, size_t errlen);

/// Withdraws the advertisement or stops browsing, and frees the service. Returns after its
/// poll thread has ended (no event is delivered afterwards), except when called from one of
/// its own events: then no further event is delivered and the rest happens on another thread.
void cavahi_stop(cavahi_service *service);

#ifdef __cplusplus
}
#endif

#endif
