// Debian: liblz4-dev. Only LogStoreEngine's compression wrapper imports this.
#include <lz4.h>
#include <lz4hc.h>
