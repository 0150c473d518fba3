// Hostile (host files at compile time): #include spelled so the line screen missed it, a
// directive split by a backslash-newline. The included file (the model's timing.toml, HOST_FILE, defined
// by the test) is compiled as the candidate's own code: its text comes back in the diagnostics.
#inc\
lude HOST_FILE
void solution(void) {}
