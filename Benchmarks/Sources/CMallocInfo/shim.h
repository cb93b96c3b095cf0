// glibc's malloc statistics (mallinfo2, malloc_trim): the memory workload measures heap bytes
// in use before and after building an index.
#if defined(__linux__)
#include <malloc.h>
#endif
