// Hostile (host files at compile time): #include spelled with the digraph %: (the same
// directive to the preprocessor): /etc/passwd comes back in the compile diagnostics.
%:include "/etc/passwd"
void solution(void) {}
