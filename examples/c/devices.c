/* The adapter table, from C: every adapter suanli sees, then the device "auto" opens.
 *   cc devices.c -I PREFIX/include -L PREFIX/lib -lsuanli -o devices */
#include <stdio.h>

#include "suanli.h"

int main(void) {
    size_t n = 0;
    if (suanli_device_count(&n) != SUANLI_OK) {
        fprintf(stderr, "suanli: %s\n", suanli_last_error());
        return 1;
    }
    printf("%-10s %-40s %-8s %-8s %s\n", "spec", "name", "backend", "kind", "subgroups");
    for (size_t i = 0; i < n; i++) {
        suanli_device_info d;
        if (suanli_device_describe(i, &d) != SUANLI_OK) {
            fprintf(stderr, "suanli: %s\n", suanli_last_error());
            return 1;
        }
        printf("%-10s %-40s %-8s %-8s %u-%u\n", d.spec, d.name, d.backend, d.is_gpu ? "gpu" : "software", d.subgroup_min, d.subgroup_max);
    }
    suanli_device *dev = NULL;
    if (suanli_device_open("auto", &dev) != SUANLI_OK) {
        fprintf(stderr, "suanli: %s\n", suanli_last_error());
        return 1;
    }
    char name[256];
    suanli_device_name(dev, name, sizeof name);
    printf("auto: %s\n", name);
    suanli_device_release(dev);
    return 0;
}
