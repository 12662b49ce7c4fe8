/* wirebench-trace for C and C++: record events into the same per-thread
 * rings and the same file format as Rust programs. Link the static library
 * (target/release/libwirebench_trace.a) and -lpthread -ldl -lm.
 *
 *   wb_trace_enable();
 *   wb_trace_record("begin", op_id);        // names: string literals only
 *   wb_trace_record("request parsed", op_id);
 *   wb_trace_record("end", op_id);
 *   wb_trace_dump("trace.txt");             // then: wirebench timeline trace.txt
 */
#ifndef WIREBENCH_TRACE_H
#define WIREBENCH_TRACE_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
void wb_trace_enable(void);
/* name: a NUL-terminated string that lives as long as the process. */
void wb_trace_record(const char *name, uint64_t arg);
/* Returns the number of events written, or -1. */
int64_t wb_trace_dump(const char *path);
#ifdef __cplusplus
}
#endif
#endif
