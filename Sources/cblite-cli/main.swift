import CBLiteCore
print("cblite")
