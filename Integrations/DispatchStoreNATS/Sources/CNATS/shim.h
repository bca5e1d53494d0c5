// The nats.c client (Debian's libnats-dev, Homebrew's cnats), found through pkg-config's libnats.
#include <nats/nats.h>
