/*
 * A stand-in for libnvidia-ml.so.1, for tests on machines without an NVIDIA driver.
 *
 * It exports the few NVML functions that pynvml calls on the nvml probe's path, with the
 * same signatures and struct layouts as nvml.h, and answers from environment variables read
 * at every call (Python's os.environ writes through to the C environment, so a test can
 * change the answers while it runs):
 *
 *   STATESNAP_NVML_STUB_INIT     return code of nvmlInitWithFlags (default 0, success;
 *                                9 = NVML_ERROR_DRIVER_NOT_LOADED)
 *   STATESNAP_NVML_STUB_DEVICES  number of devices (default 1, at most 8)
 *   STATESNAP_NVML_STUB_PROCS    compute processes, "dev:pid:bytes,...": pid is a number,
 *                                "self" (the calling process) or "parent"; bytes is a number
 *                                or "na" (NVML_VALUE_NOT_AVAILABLE)
 *   STATESNAP_NVML_STUB_USED     device-wide used bytes, "dev:bytes,..." (default: the sum of
 *                                the device's processes plus 400 MiB)
 *   STATESNAP_NVML_STUB_PROCS_RC return code of the process query (default 0; 3 = not
 *                                supported)
 *
 * statesnap_stub_count(name) says how many times a function was called ("*" for all), so a
 * test can check how often the probe really asked NVML.
 *
 * Built by the tests with: gcc -shared -fPIC -o <dir>/libnvidia-ml.so.1 nvml_stub.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define MAX_DEVICES 8
#define MAX_PROCS 64

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

/* nvmlProcessInfo_v2_t == nvmlProcessInfo_t of NVML 11.5+, what _v2 and _v3 fill in. */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

struct nvmlDevice_st {
    unsigned int index;
};
typedef struct nvmlDevice_st *nvmlDevice_t;

static struct nvmlDevice_st devices[MAX_DEVICES];
static int initialized = 0;
static unsigned long calls_total, calls_init, calls_shutdown, calls_procs, calls_memory;

static int env_int(const char *name, int fallback) {
    const char *text = getenv(name);
    return text && *text ? atoi(text) : fallback;
}

static unsigned device_count(void) {
    int n = env_int("STATESNAP_NVML_STUB_DEVICES", 1);
    if (n < 0) n = 0;
    if (n > MAX_DEVICES) n = MAX_DEVICES;
    return (unsigned)n;
}

/* Parses STATESNAP_NVML_STUB_PROCS for one device into out[]; returns how many. */
static unsigned parse_procs(unsigned device, nvmlProcessInfo_t *out, unsigned cap) {
    const char *text = getenv("STATESNAP_NVML_STUB_PROCS");
    unsigned n = 0;
    if (!text) return 0;
    char *copy = strdup(text);
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char pid_text[32], bytes_text[32];
        unsigned dev;
        if (sscanf(item, " %u:%31[^:]:%31s", &dev, pid_text, bytes_text) != 3) continue;
        if (dev != device || n >= cap) continue;
        unsigned pid;
        if (strcmp(pid_text, "self") == 0) pid = (unsigned)getpid();
        else if (strcmp(pid_text, "parent") == 0) pid = (unsigned)getppid();
        else pid = (unsigned)strtoul(pid_text, NULL, 10);
        out[n].pid = pid;
        out[n].usedGpuMemory =
            strcmp(bytes_text, "na") == 0 ? ~0ULL : strtoull(bytes_text, NULL, 10);
        out[n].gpuInstanceId = ~0U;
        out[n].computeInstanceId = ~0U;
        n++;
    }
    free(copy);
    return n;
}

static unsigned long long device_used(unsigned device) {
    const char *text = getenv("STATESNAP_NVML_STUB_USED");
    if (text) {
        char *copy = strdup(text);
        char *save = NULL;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
            unsigned dev;
            unsigned long long bytes;
            if (sscanf(item, " %u:%llu", &dev, &bytes) == 2 && dev == device) {
                free(copy);
                return bytes;
            }
        }
        free(copy);
    }
    nvmlProcessInfo_t procs[MAX_PROCS];
    unsigned n = parse_procs(device, procs, MAX_PROCS);
    unsigned long long sum = 400ULL << 20;
    for (unsigned i = 0; i < n; i++)
        if (procs[i].usedGpuMemory != ~0ULL) sum += procs[i].usedGpuMemory;
    return sum;
}

static int check_device(nvmlDevice_t device) {
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    if (device < devices || device >= devices + device_count()) return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

static void copy_text(char *buf, unsigned len, const char *text) {
    if (!buf || !len) return;
    strncpy(buf, text, len - 1);
    buf[len - 1] = '\0';
}

unsigned long statesnap_stub_count(const char *name) {
    if (strcmp(name, "*") == 0) return calls_total;
    if (strcmp(name, "init") == 0) return calls_init;
    if (strcmp(name, "shutdown") == 0) return calls_shutdown;
    if (strcmp(name, "processes") == 0) return calls_procs;
    if (strcmp(name, "memory") == 0) return calls_memory;
    return 0;
}

int nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    calls_total++;
    calls_init++;
    int rc = env_int("STATESNAP_NVML_STUB_INIT", 0);
    if (rc == NVML_SUCCESS) {
        initialized++;
        for (unsigned i = 0; i < MAX_DEVICES; i++) devices[i].index = i;
    }
    return rc;
}

int nvmlInit_v2(void) { return nvmlInitWithFlags(0); }

int nvmlShutdown(void) {
    calls_total++;
    calls_shutdown++;
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    initialized--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(int result) {
    switch (result) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error (stub)";
    }
}

int nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    calls_total++;
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    copy_text(version, length, "999.99-statesnap-stub");
    return NVML_SUCCESS;
}

int nvmlDeviceGetCount_v2(unsigned int *count) {
    calls_total++;
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    *count = device_count();
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    calls_total++;
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    if (index >= device_count()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[index];
    return NVML_SUCCESS;
}

int nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    calls_total++;
    int rc = check_device(device);
    if (rc == NVML_SUCCESS) copy_text(name, length, "Stub GPU");
    return rc;
}

int nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    calls_total++;
    calls_memory++;
    int rc = check_device(device);
    if (rc != NVML_SUCCESS) return rc;
    memory->total = 80ULL << 30;
    memory->used = device_used(device->index);
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
}

int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                            nvmlProcessInfo_t *infos) {
    calls_total++;
    calls_procs++;
    int rc = check_device(device);
    if (rc != NVML_SUCCESS) return rc;
    rc = env_int("STATESNAP_NVML_STUB_PROCS_RC", 0);
    if (rc != NVML_SUCCESS) return rc;
    nvmlProcessInfo_t procs[MAX_PROCS];
    unsigned n = parse_procs(device->index, procs, MAX_PROCS);
    if (*count < n || (n > 0 && infos == NULL)) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n) memcpy(infos, procs, n * sizeof(procs[0]));
    *count = n;
    return NVML_SUCCESS;
}

int nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *count,
                                            nvmlProcessInfo_t *infos) {
    return nvmlDeviceGetComputeRunningProcesses_v3(device, count, infos);
}
