/* SPDX-License-Identifier: MIT */
/* idmintd's sd_notify messages (see sdnotify.h). */
#include "sdnotify.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <systemd/sd-daemon.h>

/* One datagram: the variables of text, newline-separated. sd_notify with
 * unset_environment 0: the variable stays for the status messages after
 * READY. A NUL or newline in a STATUS= text would end it early or start
 * another variable: status texts are made here, of one line. */
static void send_state(const char *text)
{
    (void)sd_notify(0, text);
}

/* Control bytes (a newline above all) out of a STATUS= text. */
static void one_line(char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
}

/* A STATUS= text from fmt and ap, of one line, into line. */
__attribute__((format(printf, 3, 0))) static void status_text(char *line, size_t cap,
                                                              const char *fmt, va_list ap)
{
    vsnprintf(line, cap, fmt, ap);
    one_line(line);
}

void idmd_notify_ready(const char *fmt, ...)
{
    char msg[600];
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    status_text(line, sizeof line, fmt, ap);
    va_end(ap);
    snprintf(msg, sizeof msg, "READY=1\nSTATUS=%s", line);
    send_state(msg);
}

void idmd_notify_status(const char *fmt, ...)
{
    char msg[600];
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    status_text(line, sizeof line, fmt, ap);
    va_end(ap);
    snprintf(msg, sizeof msg, "STATUS=%s", line);
    send_state(msg);
}

void idmd_notify_stopping(void)
{
    send_state("STOPPING=1\nSTATUS=stopping: finishing the requests in flight");
}
