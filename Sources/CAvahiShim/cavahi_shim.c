// See include/cavahi_shim.h. Avahi's types come from its headers (Debian's
#define _GNU_SOURCE
// libavahi-client-dev); its functions are looked up with dlsym, never linked.
#include "cavahi_shim.h"

#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- the library, loaded once -------------------------------------------------------

static struct {
    AvahiThreadedPoll *(*poll_new)(void);
    const AvahiPoll *(*poll_get)(AvahiThreadedPoll *);
    int (*poll_start)(AvahiThreadedPoll *);
    int (*poll_stop)(AvahiThreadedPoll *);
    void (*poll_free)(AvahiThreadedPoll *);
    void (*poll_lock)(AvahiThreadedPoll *);
    void (*poll_unlock)(AvahiThreadedPoll *);
    const char *(*strerror)(int);
    AvahiStringList *(*strlst_new_from_array)(const char **, int);
    AvahiStringList *(*strlst_next)(AvahiStringList *);
    uint8_t *(*strlst_text)(AvahiStringList *);
    size_t (*strlst_size)(AvahiStringList *);
    void (*strlst_free)(AvahiStringList *);
    char *(*alternative_service_name)(const char *);
    void (*free)(void *);
    char *(*address_snprint)(char *, size_t, const AvahiAddress *);
    AvahiClient *(*client_new)(const AvahiPoll *, AvahiClientFlags, AvahiClientCallback, void *, int *);
    void (*client_free)(AvahiClient *);
    int (*client_errno)(AvahiClient *);
    AvahiEntryGroup *(*group_new)(AvahiClient *, AvahiEntryGroupCallback, void *);
    int (*group_add)(AvahiEntryGroup *, AvahiIfIndex, AvahiProtocol, AvahiPublishFlags, const char *, const char *,
                     const char *, const char *, uint16_t, AvahiStringList *);
    int (*group_commit)(AvahiEntryGroup *);
    int (*group_reset)(AvahiEntryGroup *);
    int (*group_update_txt)(AvahiEntryGroup *, AvahiIfIndex, AvahiProtocol, AvahiPublishFlags, const char *,
                            const char *, const char *, AvahiStringList *);
    AvahiServiceBrowser *(*browser_new)(AvahiClient *, AvahiIfIndex, AvahiProtocol, const char *, const char *,
                                        AvahiLookupFlags, AvahiServiceBrowserCallback, void *);
    AvahiServiceResolver *(*resolver_new)(AvahiClient *, AvahiIfIndex, AvahiProtocol, const char *, const char *,
                                          const char *, AvahiProtocol, AvahiLookupFlags, AvahiServiceResolverCallback,
                                          void *);
    int (*resolver_free)(AvahiServiceResolver *);
} av;
static char load_error[256];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
    // RTLD_LOCAL: Avahi's symbols stay out of the host program's namespace.
    void *common = dlopen("libavahi-common.so.3", RTLD_NOW | RTLD_LOCAL);
    void *client = common ? dlopen("libavahi-client.so.3", RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!common || !client) {
        snprintf(load_error, sizeof load_error, "%s (install Avahi's client library, Debian's libavahi-client3)", dlerror());
        return;
    }
    const char *missing = NULL;
#define SYM(lib, field, name) \
    if (!(*(void **)&av.field = dlsym(lib, name)) && !missing) missing = name;
    SYM(common, poll_new, "avahi_threaded_poll_new")
    SYM(common, poll_get, "avahi_threaded_poll_get")
    SYM(common, poll_start, "avahi_threaded_poll_start")
    SYM(common, poll_stop, "avahi_threaded_poll_stop")
    SYM(common, poll_free, "avahi_threaded_poll_free")
    SYM(common, poll_lock, "avahi_threaded_poll_lock")
    SYM(common, poll_unlock, "avahi_threaded_poll_unlock")
    SYM(common, strerror, "avahi_strerror")
    SYM(common, strlst_new_from_array, "avahi_string_list_new_from_array")
    SYM(common, strlst_next, "avahi_string_list_get_next")
    SYM(common, strlst_text, "avahi_string_list_get_text")
    SYM(common, strlst_size, "avahi_string_list_get_size")
    SYM(common, strlst_free, "avahi_string_list_free")
    SYM(common, alternative_service_name, "avahi_alternative_service_name")
    SYM(common, free, "avahi_free")
    SYM(common, address_snprint, "avahi_address_snprint")
    SYM(client, client_new, "avahi_client_new")
    SYM(client, client_free, "avahi_client_free")
    SYM(client, client_errno, "avahi_client_errno")
    SYM(client, group_new, "avahi_entry_group_new")
    SYM(client, group_add, "avahi_entry_group_add_service_strlst")
    SYM(client, group_commit, "avahi_entry_group_commit")
    SYM(client, group_reset, "avahi_entry_group_reset")
    SYM(client, group_update_txt, "avahi_entry_group_update_service_txt_strlst")
    SYM(client, browser_new, "avahi_service_browser_new")
    SYM(client, resolver_new, "avahi_service_resolver_new")
    SYM(client, resolver_free, "avahi_service_resolver_free")
#undef SYM
    if (missing) {
        snprintf(load_error, sizeof load_error, "the Avahi library lacks %s", missing);
        av.poll_new = NULL;
    }
}

// ---- services -------------------------------------------------------------------------

struct cavahi_service {
    AvahiThreadedPoll *poll;
    AvahiClient *client;
    cavahi_event_fn fn;
    void *context;
    atomic_int stopped;          // set by cavahi_stop: no event is delivered afterwards
    // advertising
    AvahiEntryGroup *group;
    char *name, *type;
    uint16_t port;
    AvahiStringList *txt;
    int committed;               // the group holds the service (reset after a collision)
    // browsing
    int browsing;
    struct resolving *resolvers;     // one per service seen, kept so its changes are reported
};

// A resolver kept while its service is there: Avahi reports the service again (found) when
// its TXT record, port or address changes.
struct resolving {
    struct resolving *next;
    AvahiServiceResolver *resolver;
    AvahiIfIndex interface;
    AvahiProtocol protocol;
    char *name, *type, *domain;
};

static void forget_resolver(cavahi_service *s, AvahiIfIndex interface, AvahiProtocol protocol, const char *name,
                            const char *type, const char *domain) {
    for (struct resolving **p = &s->resolvers; *p; p = &(*p)->next) {
        struct resolving *r = *p;
        if (r->interface == interface && r->protocol == protocol && !strcmp(r->name, name) && !strcmp(r->type, type)
            && !strcmp(r->domain, domain)) {
            *p = r->next;
            av.resolver_free(r->resolver);
            free(r->name); free(r->type); free(r->domain);
            free(r);
            return;
        }
    }
}

// The service whose event this thread is delivering (a stop from inside it must not join
// its own thread).
static _Thread_local cavahi_service *delivering;

static void deliver(cavahi_service *s, cavahi_event *e) {
    if (atomic_load(&s->stopped)) return;
    delivering = s;
    s->fn(s->context, e);
    delivering = NULL;
}

static void fail(cavahi_service *s, const char *what, int error) {
    char message[300];
    snprintf(message, sizeof message, "%s: %s", what, av.strerror(error));
    cavahi_event e = {.kind = CAVAHI_FAILED, .name = s->name, .type = s->type, .message = message};
    deliver(s, &e);
}

static void register_service(cavahi_service *s, AvahiClient *c);

static void rename_service(cavahi_service *s, AvahiClient *c) {
    char *alternative = av.alternative_service_name(s->name);
    char *copy = alternative ? strdup(alternative) : NULL;
    if (alternative) av.free(alternative);
    if (!copy) {
        fail(s, "DNS-SD: cannot pick another name", AVAHI_ERR_NO_MEMORY);
        return;
    }
    free(s->name);
    s->name = copy;
    cavahi_event e = {.kind = CAVAHI_RENAMED, .name = s->name, .type = s->type};
    deliver(s, &e);
    register_service(s, c);
}

static void group_callback(AvahiEntryGroup *g, AvahiEntryGroupState state, void *userdata) {
    cavahi_service *s = userdata;
    if (state == AVAHI_ENTRY_GROUP_ESTABLISHED) {
        cavahi_event e = {.kind = CAVAHI_PUBLISHED, .name = s->name, .type = s->type};
        deliver(s, &e);
    } else if (state == AVAHI_ENTRY_GROUP_COLLISION) {
        // Another host holds the name: DNS-SD's rule is to pick the next name and probe again.
        av.group_reset(g);
        s->committed = 0;
        rename_service(s, s->client);
    } else if (state == AVAHI_ENTRY_GROUP_FAILURE) {
        fail(s, "DNS-SD: the advertisement failed", s->client ? av.client_errno(s->client) : AVAHI_ERR_FAILURE);
    }
}

static void register_service(cavahi_service *s, AvahiClient *c) {
    if (!s->group && !(s->group = av.group_new(c, group_callback, s))) {
        fail(s, "DNS-SD: cannot create an entry group", av.client_errno(c));
        return;
    }
    int r = av.group_add(s->group, AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC, 0, s->name, s->type, NULL, NULL, s->port, s->txt);
    if (r == AVAHI_ERR_COLLISION) {        // a local service already has the name
        av.group_reset(s->group);
        rename_service(s, c);
        return;
    }
    if (r < 0 || (r = av.group_commit(s->group)) < 0) fail(s, "DNS-SD: cannot advertise the service", r);
    else s->committed = 1;
}

static void publish_client_callback(AvahiClient *c, AvahiClientState state, void *userdata) {
    cavahi_service *s = userdata;
    s->client = c;     // also during avahi_client_new, which calls back before returning
    switch (state) {
    case AVAHI_CLIENT_S_RUNNING:
        // Also after the daemon's host name changed: register (again) once it runs.
        if (!s->committed) register_service(s, c);
        break;
    case AVAHI_CLIENT_S_COLLISION:
    case AVAHI_CLIENT_S_REGISTERING:
        if (s->group) av.group_reset(s->group);
        s->committed = 0;
        break;
    case AVAHI_CLIENT_FAILURE:
        fail(s, "DNS-SD: lost the Avahi daemon", av.client_errno(c));
        break;
    default: break;
    }
}

// ---- browsing -------------------------------------------------------------------------

static void resolver_callback(AvahiServiceResolver *r, AvahiIfIndex interface, AvahiProtocol protocol,
                              AvahiResolverEvent event, const char *name, const char *type, const char *domain,
                              const char *host, const AvahiAddress *address, uint16_t port, AvahiStringList *txt,
                              AvahiLookupResultFlags flags, void *userdata) {
    (void)flags;
    cavahi_service *s = userdata;
    if (event == AVAHI_RESOLVER_FOUND) {
        char addr[AVAHI_ADDRESS_STR_MAX];
        av.address_snprint(addr, sizeof addr, address);
        int n = 0;
        for (AvahiStringList *l = txt; l; l = av.strlst_next(l)) n++;
        char **items = calloc((size_t)n + 1, sizeof *items);
        int count = 0;
        for (AvahiStringList *l = txt; l && items; l = av.strlst_next(l)) {
            size_t size = av.strlst_size(l);
            char *item = malloc(size + 1);
            if (!item) break;
            memcpy(item, av.strlst_text(l), size);
            item[size] = 0;
            items[count++] = item;
        }
        cavahi_event e = {.kind = CAVAHI_FOUND, .name = name, .type = type, .domain = domain, .host = host,
                          .address = addr, .port = port, .interface = interface, .protocol = protocol,
                          .txt = (const char *const *)items, .txt_count = count};
        deliver(s, &e);
        for (int i = 0; i < count; i++) free(items[i]);
        free(items);
    }
    else {
        // A service that cannot be resolved (it went away meanwhile, timed out) is not reported.
        forget_resolver(s, interface, protocol, name, type, domain);
    }
    (void)r;
}

static void browser_callback(AvahiServiceBrowser *b, AvahiIfIndex interface, AvahiProtocol protocol,
                             AvahiBrowserEvent event, const char *name, const char *type, const char *domain,
                             AvahiLookupResultFlags flags, void *userdata) {
    (void)b; (void)flags;
    cavahi_service *s = userdata;
    switch (event) {
    case AVAHI_BROWSER_NEW:
        // Resolved on the browse's own interface and protocol, to an address of that protocol
        // (a host publishes its IPv6 link-local address over IPv4 too, unusable without its
        // interface): one report per place it is seen, IPv4 ones giving IPv4 addresses.
    {
        struct resolving *r = calloc(1, sizeof *r);
        if (r && (r->name = strdup(name)) && (r->type = strdup(type)) && (r->domain = strdup(domain))
            && (r->resolver = av.resolver_new(s->client, interface, protocol, name, type, domain, protocol, 0,
                                              resolver_callback, s))) {
            r->interface = interface;
            r->protocol = protocol;
            r->next = s->resolvers;
            s->resolvers = r;
        } else {
            if (r) { free(r->name); free(r->type); free(r->domain); free(r); }
            fail(s, "DNS-SD: cannot resolve a service", av.client_errno(s->client));
        }
        break;
    }
    case AVAHI_BROWSER_REMOVE: {
        forget_resolver(s, interface, protocol, name, type, domain);
        cavahi_event e = {.kind = CAVAHI_REMOVED, .name = name, .type = type, .domain = domain,
                          .interface = interface, .protocol = protocol};
        deliver(s, &e);
        break;
    }
    case AVAHI_BROWSER_FAILURE:
        fail(s, "DNS-SD: browsing failed", av.client_errno(s->client));
        break;
    default: break;      // ALL_FOR_NOW, CACHE_EXHAUSTED: browsing goes on
    }
}

static void browse_client_callback(AvahiClient *c, AvahiClientState state, void *userdata) {
    cavahi_service *s = userdata;
    s->client = c;      // also during avahi_client_new, which calls back before returning
    if (state == AVAHI_CLIENT_S_RUNNING && !s->browsing) {
        if (av.browser_new(c, AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC, s->type, NULL, 0, browser_callback, s)) s->browsing = 1;
        else fail(s, "DNS-SD: cannot browse", av.client_errno(c));
    } else if (state == AVAHI_CLIENT_FAILURE) {
        fail(s, "DNS-SD: lost the Avahi daemon", av.client_errno(c));
    }
}

// ---- start and stop ---------------------------------------------------------------------

static void release(cavahi_service *s) {
    if (s->poll) av.poll_stop(s->poll);              // joins the poll thread
    if (s->client) av.client_free(s->client);       // and with it the group, browser, resolvers
    while (s->resolvers) {                           // the client freed their resolvers
        struct resolving *r = s->resolvers;
        s->resolvers = r->next;
        free(r->name); free(r->type); free(r->domain);
        free(r);
    }
    if (s->poll) av.poll_free(s->poll);
    if (s->txt) av.strlst_free(s->txt);
    free(s->name);
    free(s->type);
    free(s);
}

static int loaded(char *errbuf, size_t errlen) {
    pthread_once(&load_once, load);
    if (av.poll_new) return 1;
    snprintf(errbuf, errlen, "DNS-SD needs Avahi: %s", load_error);
    return 0;
}

static cavahi_service *new_service(const char *name, const char *type, cavahi_event_fn fn, void *context) {
    cavahi_service *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->name = name ? strdup(name) : NULL;
    s->type = strdup(type);
    s->fn = fn;
    s->context = context;
    if ((name && !s->name) || !s->type) { free(s->name); free(s->type); free(s); return NULL; }
    return s;
}

// Connects to the daemon and starts the poll thread. The client callback runs during
// avahi_client_new (with S_RUNNING an advertisement is registered then), on the caller's
// thread, before the poll thread starts.
static cavahi_status start_service(cavahi_service *s, AvahiClientCallback callback, char *errbuf, size_t errlen) {
    int error = 0;
    if (!(s->poll = av.poll_new())) {
        snprintf(errbuf, errlen, "DNS-SD: cannot create Avahi's event loop");
        return CAVAHI_ERROR;
    }
    if (!(s->client = av.client_new(av.poll_get(s->poll), 0, callback, s, &error))) {
        snprintf(errbuf, errlen, "DNS-SD: the Avahi daemon is not reachable over D-Bus (%s); is avahi-daemon running?",
                 av.strerror(error));
        return CAVAHI_NO_DAEMON;
    }
    if (av.poll_start(s->poll) < 0) {
        snprintf(errbuf, errlen, "DNS-SD: cannot start Avahi's event loop thread");
        return CAVAHI_ERROR;
    }
    return CAVAHI_OK;
}

cavahi_status cavahi_publish(const char *name, const char *type, uint16_t port, const char *const *txt, int txt_count,
                             cavahi_event_fn fn, void *context, cavahi_service **out, char *errbuf, size_t errlen) {
    *out = NULL;
    if (!loaded(errbuf, errlen)) return CAVAHI_NO_LIBRARY;
    cavahi_service *s = new_service(name, type, fn, context);
    if (!s) { snprintf(errbuf, errlen, "out of memory"); return CAVAHI_ERROR; }
    s->port = port;
    s->txt = txt_count > 0 ? av.strlst_new_from_array((const char **)txt, txt_count) : NULL;
    cavahi_status st = start_service(s, publish_client_callback, errbuf, errlen);
    if (st != CAVAHI_OK) { release(s); return st; }
    *out = s;
    return CAVAHI_OK;
}

cavahi_status cavahi_update_txt(cavahi_service *s, const char *const *txt, int txt_count, char *errbuf, size_t errlen) {
    AvahiStringList *list = txt_count > 0 ? av.strlst_new_from_array((const char **)txt, txt_count) : NULL;
    cavahi_status st = CAVAHI_OK;
    // The poll thread owns the group: change it under its lock (which that thread, inside
    // one of its events, already holds).
    int own_thread = delivering == s;
    if (!own_thread) av.poll_lock(s->poll);
    if (s->committed) {
        int r = av.group_update_txt(s->group, AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC, 0, s->name, s->type, NULL, list);
        if (r < 0) {
            snprintf(errbuf, errlen, "DNS-SD: cannot update the TXT record: %s", av.strerror(r));
            st = CAVAHI_ERROR;
        }
    }
    if (st == CAVAHI_OK) {
        if (s->txt) av.strlst_free(s->txt);
        s->txt = list;              // what a later registration (after a conflict) publishes
    } else if (list) {
        av.strlst_free(list);
    }
    if (!own_thread) av.poll_unlock(s->poll);
    return st;
}

cavahi_status cavahi_browse(const char *type, cavahi_event_fn fn, void *context, cavahi_service **out,
                            char *errbuf, size_t errlen) {
    *out = NULL;
    if (!loaded(errbuf, errlen)) return CAVAHI_NO_LIBRARY;
    cavahi_service *s = new_service(NULL, type, fn, context);
    if (!s) { snprintf(errbuf, errlen, "out of memory"); return CAVAHI_ERROR; }
    cavahi_status st = start_service(s, browse_client_callback, errbuf, errlen);
    if (st != CAVAHI_OK) { release(s); return st; }
    *out = s;
    return CAVAHI_OK;
}

static void *release_thread(void *s) {
    release(s);
    return NULL;
}

void cavahi_stop(cavahi_service *s) {
    if (!s) return;
    atomic_store(&s->stopped, 1);
    if (delivering == s) {
        // Inside one of its events, on its poll thread: that thread cannot join itself.
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, release_thread, s) != 0) atomic_store(&s->stopped, 2);   // leaked, never crashes
        pthread_attr_destroy(&attr);
        return;
    }
    release(s);
}
