/* The runtime's calls into the machine mode (a7 = the call, a0.. = its arguments). */
#ifndef AUTOCOMP_GEMMINI_MACHINE_H
#define AUTOCOMP_GEMMINI_MACHINE_H
#define MACHINE_CALL_WRITE 1 /* a0 = buffer, a1 = length: to the console */
#define MACHINE_CALL_DONE 2  /* the user code returned (user_entry) */
#endif
