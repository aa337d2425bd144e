include(GoogleTest)
