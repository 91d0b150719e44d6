/*
 * keep.h - what a live cache keeps of an object: the informers' transform and filter for
 * the controller's and the webhook's caches (lib/client/live).
 *
 * A trimmed object diagnoses as the whole one does (tests/unit/test_snapshot.c): every
 * member the model (lib/model/dra.c), the rules, the diagnosis and the controller read is
 * kept, the rest goes before the object is cached.  Reading a new field means keeping it
 * here.
 */
#ifndef DD_KEEP_H
#define DD_KEEP_H

#include <cjson/cJSON.h>

/*
 * Drops from obj (in place) what nothing reads: for Pods, ResourceClaims, Events, Nodes,
 * ResourceSlices and ResourceQuotas all but the members read; for every kind, metadata
 * other than name, namespace and dra-doctor's own annotations.  Common keys and values
 * then point at static strings instead of copies (cJSON's StringIsConst and IsReference
 * flags, which cJSON_Delete honours).  Members many objects have alike are moved last and
 * marked (dd_json_tail), for dd_json_pack to hold them once.  Trimming twice changes nothing.
 */
void keep_trim(cJSON *obj);

/*
 * keep_trim for a cache whose readers judge only objects being created (the webhook's):
 * also, of an allocated claim's status.reservedFor, only whether it is empty.  A Pod being
 * created is in no claim's list, so the allocator's one question of it (may the scheduler
 * deallocate this claim: is it reserved for no other pod) is answered by that alone; a
 * non-empty list becomes [{}], held once.  Most of a cached claim's own nodes, and the
 * update a Pod's binding makes to its claims changes nothing cached.
 */
void keep_trim_admission(cJSON *obj);

/* After keep_trim: 0 for objects no diagnosis reads (Pods without resource claims, extended
 * resources or a kubelet plugin's volumes; Events of reasons keep_event_reason rejects). */
int keep_object(const cJSON *obj);

/* 1 when the diagnosis reads Events with this reason (reason may be NULL). */
int keep_event_reason(const char *reason);

#endif
