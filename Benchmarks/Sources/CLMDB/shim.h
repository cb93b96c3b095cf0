// LMDB (Debian: liblmdb-dev), the key/value peer of the LogStore benchmarks.
#include <lmdb.h>
