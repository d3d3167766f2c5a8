// The translation unit that compiles the test programs' shared precompiled header
// (wireup_test_pch in tests/CMakeLists.txt); it has nothing of its own.
