// doctest entry point of the golden tests (generated CUDA compared as text and compiled with NVRTC; no GPU).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
