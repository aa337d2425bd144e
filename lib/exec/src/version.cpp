// Placeholder translation unit so reshard::exec always has a source; replaced as exec grows.
namespace reshard::exec_detail {
int exec_library_present = 1;
}
