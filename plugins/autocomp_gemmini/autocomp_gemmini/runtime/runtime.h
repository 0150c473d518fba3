/* Minimal bare-metal runtime for Spike: console output, exit, memory helpers. */
#ifndef AUTOCOMP_GEMMINI_RUNTIME_H
#define AUTOCOMP_GEMMINI_RUNTIME_H
#include <stddef.h>
#include <stdint.h>

int printf(const char *fmt, ...);
int puts(const char *s);
void rt_exit(int code) __attribute__((noreturn));
void exit(int code) __attribute__((noreturn));
void *memset(void *dst, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
int abs(int x);
#endif
